-- pgq.metrics_series(entrypoints, combined, at)
-- Contract: the last hour minute by minute, for charts: one row per series and minute, 60
--   minutes ending with the minute `at` falls in (that last one is in progress: partial), in
--   order. A series is one entrypoint (every one in pgq.entrypoints, or those given), or with
--   combined => true one series (entrypoint NULL) over all of them. Per minute:
--   successful, failed (dead), canceled: jobs that finished in it (from the rollup's 10-second
--   buckets, as pgq.metrics counts them; 0 without any); due and running: the backlog sample
--   pgq.rollup_metrics took in that minute (summed over the series' entrypoints; NULL when no
--   sample was taken: nothing called the rollup that minute); wait_p95_s and run_p95_s: the
--   95th percentile of the wait and run times of the jobs finished in it (the rollup's
--   histograms merged, within about 19 %; NULL without samples). It reads, it does not advance
--   the rollup: call pgq.metrics first for figures up to the last 10 seconds. Cost: at most
--   360 buckets and 60 samples per entrypoint (one hour is all the rollup keeps).
--   at NULL means now().
-- Locking: none (reads).
-- Errors: PQ009 combined NULL, at out of range, a multi-dimensional entrypoints array.
CREATE OR REPLACE FUNCTION pgq.metrics_series(
    entrypoints  text[]      DEFAULT NULL,
    combined     boolean     DEFAULT false,
    at           timestamptz DEFAULT NULL
)
RETURNS TABLE (
    entrypoint  text,
    minute      timestamptz,
    successful  bigint,
    failed      bigint,
    canceled    bigint,
    due         bigint,
    running     bigint,
    wait_p95_s  float8,
    run_p95_s   float8
)
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET jit = off
SET max_parallel_workers_per_gather = 0
AS $$
#variable_conflict use_column
DECLARE
    v_cur   timestamptz := date_bin(interval '1 minute', coalesce(pgq._check_time(metrics_series.at, 'at'), now()),
                                    timestamptz '2000-01-01 00:00:00+00');
    v_first timestamptz;
BEGIN
    PERFORM pgq._check_dims(metrics_series.entrypoints, 'entrypoints');
    IF metrics_series.combined IS NULL THEN
        RAISE EXCEPTION 'combined must be true or false, got NULL' USING ERRCODE = 'PQ009';
    END IF;
    v_first := v_cur - interval '59 minutes';
    RETURN QUERY
    WITH eps AS (
        -- the series key: the entrypoint, or '' for the combined series (no name is empty)
        SELECT e.entrypoint, CASE WHEN metrics_series.combined THEN '' ELSE e.entrypoint END AS k
          FROM pgq.entrypoints e
         WHERE metrics_series.entrypoints IS NULL OR e.entrypoint = ANY (metrics_series.entrypoints)
    ), b AS (
        SELECT e.k, date_bin(interval '1 minute', m.bucket, timestamptz '2000-01-01 00:00:00+00') AS minute,
               m.successful, m.failed, m.canceled, m.wait_bins, m.wait_counts, m.run_bins, m.run_counts
          FROM eps e
          JOIN pgq.metrics_buckets m ON m.entrypoint = e.entrypoint
         WHERE m.bucket >= v_first AND m.bucket < v_cur + interval '1 minute'
    ), counts AS (
        SELECT b.k, b.minute, sum(b.successful) AS successful, sum(b.failed) AS failed,
               sum(b.canceled) AS canceled
          FROM b
         GROUP BY b.k, b.minute
    ), wait_q AS (
        SELECT h.k, h.minute,
               (pgq._hist_quantiles(array_agg(h.bin ORDER BY h.bin), array_agg(h.n ORDER BY h.bin), '{0.95}'))[1] AS q
          FROM (SELECT b.k, b.minute, u.bin, sum(u.n)::bigint AS n
                  FROM b, unnest(b.wait_bins, b.wait_counts) AS u(bin, n)
                 GROUP BY b.k, b.minute, u.bin) AS h
         GROUP BY h.k, h.minute
    ), run_q AS (
        SELECT h.k, h.minute,
               (pgq._hist_quantiles(array_agg(h.bin ORDER BY h.bin), array_agg(h.n ORDER BY h.bin), '{0.95}'))[1] AS q
          FROM (SELECT b.k, b.minute, u.bin, sum(u.n)::bigint AS n
                  FROM b, unnest(b.run_bins, b.run_counts) AS u(bin, n)
                 GROUP BY b.k, b.minute, u.bin) AS h
         GROUP BY h.k, h.minute
    ), backlog AS (
        SELECT e.k, l.minute, sum(l.due)::bigint AS due, sum(l.running)::bigint AS running
          FROM eps e
          JOIN pgq.metrics_backlog l ON l.entrypoint = e.entrypoint
         WHERE l.minute >= v_first AND l.minute <= v_cur
         GROUP BY e.k, l.minute
    )
    SELECT nullif(s.k, ''), g.minute,
           coalesce(c.successful, 0)::bigint, coalesce(c.failed, 0)::bigint, coalesce(c.canceled, 0)::bigint,
           l.due, l.running, w.q, r.q
      FROM (SELECT DISTINCT e.k FROM eps e) AS s
     CROSS JOIN generate_series(v_first, v_cur, interval '1 minute') AS g(minute)
      LEFT JOIN counts c ON c.k = s.k AND c.minute = g.minute
      LEFT JOIN wait_q w ON w.k = s.k AND w.minute = g.minute
      LEFT JOIN run_q r ON r.k = s.k AND r.minute = g.minute
      LEFT JOIN backlog l ON l.k = s.k AND l.minute = g.minute
     ORDER BY s.k, g.minute;
END
$$;
COMMENT ON FUNCTION pgq.metrics_series(text[], boolean, timestamptz) IS
    'The last hour per minute, for charts: finished per status, the due and running backlog sampled each minute, wait and run p95; per entrypoint, or combined. Reads only.';
