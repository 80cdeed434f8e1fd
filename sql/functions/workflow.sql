-- pgq.workflow(job_id)
-- Contract: every job of a workflow, given its workflow id or any of its jobs: the jobs on its
--   edges (pgq.job_deps with that workflow_id; at most 100,000 jobs), live or finished, each
--   with its state (scheduled, waiting, queued, running, successful, failed, canceled;
--   'pruned' when it left history), entrypoint, attempt, finished_at, parents (the jobs it
--   waits or waited for in this workflow, with each edge's state: pending, satisfied, failed,
--   and run_anyway), children (in this workflow) and the workflow id. A workflow id is the id
--   of the first job of the pgq.enqueue_many call that started the graph; given a job that is
--   not one, the job's workflow (the oldest, when a later call joined it to another). Ordered
--   by id. Empty when the job has no dependency and no dependent (or does not exist).
-- Locking: none (reads only).
-- Errors: PQ009 NULL job_id.
CREATE OR REPLACE FUNCTION pgq.workflow(job_id bigint)
RETURNS TABLE (id bigint, entrypoint text, state text, attempt int, finished_at timestamptz,
               parents jsonb, children bigint[], workflow_id bigint)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_wf bigint;
BEGIN
    IF workflow.job_id IS NULL THEN
        RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    v_wf := CASE WHEN EXISTS (SELECT 1 FROM pgq.job_deps d WHERE d.workflow_id = workflow.job_id)
                 THEN workflow.job_id
                 ELSE pgq._workflow_of(workflow.job_id) END;
    RETURN QUERY
    WITH ids AS (
        SELECT m.id
          FROM (SELECT d.parent_id AS id FROM pgq.job_deps d WHERE d.workflow_id = v_wf
                UNION
                SELECT d.child_id FROM pgq.job_deps d WHERE d.workflow_id = v_wf) m
         ORDER BY m.id
         LIMIT 100000
    )
    SELECT i.id,
           coalesce(j.entrypoint, h.entrypoint),
           coalesce(j.status, h.status, 'pruned'),
           coalesce(j.attempt, h.attempt),
           h.finished_at,
           coalesce((SELECT jsonb_agg(jsonb_build_object('id', d.parent_id, 'state', d.state, 'run_anyway', d.run_anyway)
                                      ORDER BY d.parent_id)
                       FROM pgq.job_deps d WHERE d.child_id = i.id AND d.workflow_id = v_wf), '[]'),
           coalesce(ARRAY(SELECT d.child_id FROM pgq.job_deps d
                           WHERE d.parent_id = i.id AND d.workflow_id = v_wf ORDER BY d.child_id), '{}'),
           v_wf
      FROM ids i
      LEFT JOIN pgq.jobs j ON j.id = i.id
      LEFT JOIN pgq.job_history h ON h.id = i.id
     ORDER BY i.id;
END
$$;
COMMENT ON FUNCTION pgq.workflow(bigint) IS
    'Every job of a workflow (given its id or any of its jobs), live or finished: state, parents (with each edge''s state), children and the workflow id.';
