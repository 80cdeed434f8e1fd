-- pgq._lane_jobs(entrypoint, priority, cursor, n, at)
-- Contract: the first n queued jobs of one lane (entrypoint, priority) due at `at`, in ready
--   order from the lane's cursor on, locked FOR UPDATE SKIP LOCKED: the candidates of a lane
--   without per-key limits in a claim that pgq._claim_keyed makes (pgq.claim's own statement
--   reads its lanes the same way, inline). A function, so that a keyed claim of no such lane
--   does not prepare this read at all.
-- Locking: row locks on the returned jobs (SKIP LOCKED).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._lane_jobs(entrypoint text, priority int, cursor bigint, n int, at timestamptz)
RETURNS TABLE (id bigint, ready_seq bigint)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq._claim_keyed, where pgq.claim's settings (generic plans, no JIT, no
-- sequential scans) are in force.
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT j.id, j.ready_seq
      FROM pgq.jobs j
     WHERE j.entrypoint = _lane_jobs.entrypoint
       AND j.priority = _lane_jobs.priority
       AND j.status = 'queued'
       AND j.slot <> 4
       AND j.ready_seq > _lane_jobs.cursor
       AND j.run_at <= _lane_jobs.at
     ORDER BY j.ready_seq
     LIMIT _lane_jobs.n
       FOR UPDATE SKIP LOCKED;
END
$$;
COMMENT ON FUNCTION pgq._lane_jobs(text, int, bigint, int, timestamptz) IS
    'Private. The first n due queued jobs of one lane from its cursor, locked SKIP LOCKED: the lanes without per-key limits of a keyed claim (pgq._claim_keyed).';
