-- pgq.history_summary(entrypoints, since_id)
-- Contract: finished jobs per entrypoint and final status: how many, the most attempts any of
--   them took, and the mean time from enqueue to finish in seconds. Only jobs with an id of at
--   least since_id (default: all) and, when entrypoints is given, of those entrypoints. A
--   report for dashboards and the demo; reads pgq.job_history only.
-- Locking: none (reads only).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq.history_summary(entrypoints text[] DEFAULT NULL, since_id bigint DEFAULT 0)
RETURNS TABLE (entrypoint text, status text, jobs bigint, max_attempt int, avg_latency_s float8)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(history_summary.entrypoints, 'entrypoints');
    RETURN QUERY
        SELECT h.entrypoint, h.status, count(*), max(h.attempt),
               avg(extract(epoch FROM h.finished_at - h.enqueued_at))::float8
          FROM pgq.job_history h
         WHERE (history_summary.entrypoints IS NULL OR h.entrypoint = ANY (history_summary.entrypoints))
           AND h.id >= coalesce(history_summary.since_id, 0)
         GROUP BY h.entrypoint, h.status
         ORDER BY h.entrypoint, h.status;
END
$$;
COMMENT ON FUNCTION pgq.history_summary(text[], bigint) IS
    'Finished jobs per entrypoint and status: count, most attempts, mean enqueue-to-finish seconds (ids >= since_id).';
