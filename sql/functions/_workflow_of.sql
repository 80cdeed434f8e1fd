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
    SELECT least((SELECT min(d.workflow_id) FROM pgq.job_deps d WHERE d.parent_id = _workflow_of.job_id),
                 (SELECT min(d.workflow_id) FROM pgq.job_deps d WHERE d.child_id = _workflow_of.job_id));
$$;
COMMENT ON FUNCTION pgq._workflow_of(bigint) IS
    'Private. The workflow id of a job''s edges (the smallest of several); NULL for a job outside any workflow.';
