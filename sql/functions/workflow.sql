-- pgq.workflow(job_id)
-- Contract: every job of the workflow job_id belongs to: the jobs connected to it through
--   dependencies (pgq.job_deps, in both directions, at most 100,000 jobs), live or finished,
--   each with its state (scheduled, waiting, queued, running, successful, failed, canceled;
--   'pruned' when it left history), entrypoint, attempt, finished_at, parents (the jobs it
--   waits or waited for, with each edge's state: pending, satisfied, failed, and run_anyway)
--   and children. Ordered by id. Empty when the job has no dependency and no dependent (or does
--   not exist).
-- Locking: none (reads only).
-- Errors: PQ009 NULL job_id.
CREATE OR REPLACE FUNCTION pgq.workflow(job_id bigint)
RETURNS TABLE (id bigint, entrypoint text, state text, attempt int, finished_at timestamptz,
               parents jsonb, children bigint[])
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    IF workflow.job_id IS NULL THEN
        RAISE EXCEPTION 'job_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    RETURN QUERY
    WITH RECURSIVE members (id) AS (
        SELECT workflow.job_id
         WHERE EXISTS (SELECT 1 FROM pgq.job_deps d WHERE d.parent_id = workflow.job_id)
            OR EXISTS (SELECT 1 FROM pgq.job_deps d WHERE d.child_id = workflow.job_id)
        UNION
        SELECT x.other
          FROM members m
         CROSS JOIN LATERAL (SELECT d.child_id AS other FROM pgq.job_deps d WHERE d.parent_id = m.id
                             UNION ALL
                             SELECT d.parent_id FROM pgq.job_deps d WHERE d.child_id = m.id) x
    ), ids AS (
        SELECT m.id FROM members m LIMIT 100000
    )
    SELECT i.id,
           coalesce(j.entrypoint, h.entrypoint),
           coalesce(j.status, h.status, 'pruned'),
           coalesce(j.attempt, h.attempt),
           h.finished_at,
           coalesce((SELECT jsonb_agg(jsonb_build_object('id', d.parent_id, 'state', d.state, 'run_anyway', d.run_anyway)
                                      ORDER BY d.parent_id)
                       FROM pgq.job_deps d WHERE d.child_id = i.id), '[]'),
           coalesce(ARRAY(SELECT d.child_id FROM pgq.job_deps d WHERE d.parent_id = i.id ORDER BY d.child_id), '{}')
      FROM ids i
      LEFT JOIN pgq.jobs j ON j.id = i.id
      LEFT JOIN pgq.job_history h ON h.id = i.id
     ORDER BY i.id;
END
$$;
COMMENT ON FUNCTION pgq.workflow(bigint) IS
    'The jobs connected to job_id through dependencies (both ways), live or finished: state, parents (with each edge''s state) and children.';
