-- pgq.key_stats(entrypoints, max_keys)
-- Contract: the busiest group keys of the entrypoints with a key_concurrency_limit (the given
--   names, NULL: every one), for dashboards and the CLI: per entrypoint, up to max_keys keys
--   with queued or running jobs, most queued first (then by key): queued, running, the limit,
--   and at_limit (running >= limit: its queued jobs wait on the key's limit, not on a worker).
--   Read-only; counts what it finds now (one walk of the entrypoint's queued and running jobs
--   with a key), so a dashboard calls it for the entrypoints it shows.
-- Locking: none (reads only).
-- Errors: PQ002 max_keys outside 1..1000; PQ009 a multi-dimensional entrypoints array.
CREATE OR REPLACE FUNCTION pgq.key_stats(entrypoints text[] DEFAULT NULL, max_keys int DEFAULT 10)
RETURNS TABLE (entrypoint text, group_key text, queued bigint, running bigint,
               key_concurrency_limit int, at_limit boolean)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    PERFORM pgq._check_dims(key_stats.entrypoints, 'entrypoints');
    IF key_stats.max_keys IS NULL OR key_stats.max_keys NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max_keys must be between 1 and 1000, got %', coalesce(key_stats.max_keys::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    RETURN QUERY
    SELECT e.entrypoint, k.group_key, k.queued, k.running, e.key_concurrency_limit,
           k.running >= e.key_concurrency_limit
      FROM pgq.entrypoints e
     CROSS JOIN LATERAL (
           -- The entrypoint's keyed jobs alone: queued ones through jobs_key_idx, running ones
           -- (a lease) through jobs_key_running_idx.
           SELECT j.group_key,
                  count(*) FILTER (WHERE NOT j.running) AS queued,
                  count(*) FILTER (WHERE j.running) AS running
             FROM (SELECT q.group_key, false AS running
                     FROM pgq.jobs q
                    WHERE hashtext(q.entrypoint) = hashtext(e.entrypoint) AND q.entrypoint = e.entrypoint
                      AND q.status = 'queued' AND q.group_key IS NOT NULL AND q.slot <> 4
                   UNION ALL
                   SELECT r.group_key, true
                     FROM pgq.jobs r
                    WHERE hashtext(r.entrypoint) = hashtext(e.entrypoint) AND r.entrypoint = e.entrypoint
                      AND r.lease IS NOT NULL AND r.group_key IS NOT NULL AND r.slot <> 4) AS j
            GROUP BY j.group_key
            ORDER BY 2 DESC, 1
            LIMIT key_stats.max_keys) AS k
     WHERE e.key_concurrency_limit IS NOT NULL
       AND (key_stats.entrypoints IS NULL OR e.entrypoint = ANY (key_stats.entrypoints))
     ORDER BY e.entrypoint, k.queued DESC, k.group_key;
END
$$;
COMMENT ON FUNCTION pgq.key_stats(text[], int) IS
    'The busiest group keys of key-limited entrypoints: queued, running, the limit and whether the key is at it (its queued jobs wait on the key''s limit).';
