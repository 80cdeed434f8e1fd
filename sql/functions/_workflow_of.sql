-- pgq._workflow_of(job_id)
-- Contract: the workflow job_id belongs to: the workflow id of its edges in pgq.job_deps (as
--   parent or as child; the oldest, i.e. smallest, when a later call joined it to another
--   workflow), NULL for a job without dependencies or dependents.
-- Locking: none (reads only).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._workflow_of(job_id bigint)
RETURNS bigint
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    -- OFFSET 0: the edges of this job first (its index), then their least workflow id; else
    -- min() walks job_deps_workflow_idx from the smallest id, filtering on the job.
    SELECT least((SELECT min(e.w) FROM (SELECT d.workflow_id AS w FROM pgq.job_deps d
                                         WHERE d.parent_id = _workflow_of.job_id OFFSET 0) e),
                 (SELECT min(e.w) FROM (SELECT d.workflow_id AS w FROM pgq.job_deps d
                                         WHERE d.child_id = _workflow_of.job_id OFFSET 0) e));
$$;
COMMENT ON FUNCTION pgq._workflow_of(bigint) IS
    'Private. The workflow id of a job''s edges (the smallest of several); NULL for a job outside any workflow.';
