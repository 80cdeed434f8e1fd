-- pgq.metrics(entrypoints, percentile_window, at)
-- Contract: one row per entrypoint (every entrypoint in pgq.entrypoints, or those given), the
--   numbers a dashboard or a Prometheus exporter shows, as typed columns:
--   - live, from pgq.jobs at `at`: paused; queued, split into due (queued jobs, and scheduled
--     ones with run_at <= at not promoted yet) and delayed (scheduled, run_at > at); running;
--     stale (running, heartbeat older than the entrypoint's heartbeat_timeout); lag_s, the age
--     of the oldest due job in seconds (how long it has been waiting since it became due: the
--     head of each lane, the job a claim takes next, and the earliest scheduled job that is
--     due; 0 when nothing is due). due and delayed are exact up to 10,000 each and read 10,000
--     when there are more (queued = due + delayed, so at most 20,000): the read stays bounded
--     whatever the backlog. lag_s, running and stale are always exact;
--   - finished jobs per final status over the last 1, 5 and 15 minutes and throughput
--     (finished jobs per second over each window), from the rollup (pgq.rollup_metrics),
--     counted in whole 10-second buckets of finished_at: "the last minute" is the six complete
--     buckets before the one `at` falls in, so the figures move every 10 seconds and trail by
--     at most 10 seconds;
--   - wait time (enqueued_at to started_at of the last attempt) and run time (started_at to
--     finished_at) percentiles p50/p95/p99 in seconds over the complete buckets of the last
--     percentile_window (10 seconds to 1 hour, rounded up to whole buckets), all statuses
--     together, NULL without samples; within one histogram bin (about 19 %);
--   - successful_total, failed_total, canceled_total: finished jobs counted since the rollup
--     started (monotonic, for Prometheus counters);
--   - rollup_caught_up: when the rollup last ran it counted every finished job up to the
--     oldest transaction of this database still running (false: more than 100,000 rows were
--     waiting, the next calls catch up);
--   - served: a live worker serves the entrypoint: one in pgq.workers that announced it and
--     counts as active at `at` (last seen within its timeout, as pgq.worker_status says), or a
--     running job of it whose heartbeat is within heartbeat_timeout (a worker that does not
--     register, seen while it works). unserved_s: NULL when served or when nothing is due;
--     else how long due work has waited with no live worker serving it: the seconds since the
--     later of the last time the registry saw a worker serving it (gone workers stay there 15
--     minutes) and the moment its oldest due job became due (so at most lag_s).
--   - flow control (NULL where the entrypoint has no such limit): rate_remaining, the starts
--     its whole-entrypoint rate limit has left in the window; rate_wait_s, when that budget is
--     used up, the seconds until one more start fits (its due jobs wait on the limit, not on a
--     worker); rate_keys_used_up, with a rate limit per key, the keys (and the jobs without a
--     key, as one) whose budget is used up; keys_at_limit, the group keys whose running jobs
--     are at key_concurrency_limit, and key_limited, the queued jobs of those keys (waiting on
--     their key's limit; exact up to 10,000). The busiest keys: pgq.key_stats, pgq.rate_stats.
--   First it advances the rollup by one bounded call (pgq.rollup_metrics, at most 100,000 rows;
--   skipped when another caller is doing it, and in a read-only or non-READ COMMITTED
--   transaction). Cost: per entrypoint, the live part reads at most 10,000 entries of the
--   claim index and 10,000 of the scheduled index per count (index-only once vacuum has set
--   the visibility map), one probe per distinct priority of its queued jobs (a loose index scan:
--   the oldest due job of each priority is the first entry) and its running jobs; the rest reads
--   at most 90 buckets; flow control reads each limited entrypoint's rate window (at most
--   rate_limit entries per budget), its running jobs and up to 10,000 queued jobs of its keys
--   at their limit. It does not grow with the backlog or the history.
--   at NULL means now().
-- Locking: as pgq.rollup_metrics (never waits for another caller); otherwise reads.
-- Errors: PQ009 percentile_window NULL or outside 10 seconds .. 1 hour.
CREATE OR REPLACE FUNCTION pgq.metrics(
    entrypoints        text[]      DEFAULT NULL,
    percentile_window  interval    DEFAULT interval '5 minutes',
    at                 timestamptz DEFAULT NULL
)
RETURNS TABLE (
    entrypoint        text,
    paused            boolean,
    queued            bigint,
    due               bigint,
    delayed           bigint,
    running           bigint,
    stale             bigint,
    lag_s             float8,
    successful_1m     bigint,
    failed_1m         bigint,
    canceled_1m       bigint,
    successful_5m     bigint,
    failed_5m         bigint,
    canceled_5m       bigint,
    successful_15m    bigint,
    failed_15m        bigint,
    canceled_15m      bigint,
    throughput_1m     float8,
    throughput_5m     float8,
    throughput_15m    float8,
    wait_p50_s        float8,
    wait_p95_s        float8,
    wait_p99_s        float8,
    run_p50_s         float8,
    run_p95_s         float8,
    run_p99_s         float8,
    successful_total  bigint,
    failed_total      bigint,
    canceled_total    bigint,
    rollup_caught_up  boolean,
    served            boolean,
    unserved_s        float8,
    rate_remaining    bigint,
    rate_wait_s       float8,
    rate_keys_used_up bigint,
    keys_at_limit     bigint,
    key_limited       bigint
)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- No JIT, no parallel workers: a scrape must not take cores from the workers (one backend
-- counting was as fast as three on two cores).
SET jit = off
SET max_parallel_workers_per_gather = 0
AS $$
#variable_conflict use_column
DECLARE
    v_now    timestamptz := coalesce(pgq._check_time(metrics.at, 'at'), now());
    v_cur    timestamptz := date_bin(interval '10 seconds', coalesce(pgq._check_time(metrics.at, 'at'), now()), timestamptz '2000-01-01 00:00:00+00');
    v_pstart timestamptz;
    -- Live counts are exact up to this many jobs (due and delayed each, per entrypoint).
    v_cap    CONSTANT bigint := 10000;
    c_whole  CONSTANT bigint := -9223372036854775808;  -- pgq.rate_starts: the whole entrypoint
BEGIN
    PERFORM pgq._check_dims(metrics.entrypoints, 'entrypoints');
    IF metrics.percentile_window IS NULL
       OR metrics.percentile_window NOT BETWEEN interval '10 seconds' AND interval '1 hour' THEN
        RAISE EXCEPTION 'percentile_window must be between 10 seconds and 1 hour, got %',
            coalesce(metrics.percentile_window::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    v_pstart := v_cur - interval '10 seconds' * ceil(date_part('epoch', metrics.percentile_window) / 10);

    IF current_setting('transaction_isolation') = 'read committed'
       AND current_setting('transaction_read_only') = 'off' THEN
        PERFORM pgq.rollup_metrics(100000, v_now);
    END IF;

    RETURN QUERY
    WITH eps AS (
        SELECT e.entrypoint, e.paused_at, e.heartbeat_timeout, e.rate_limit, e.rate_period, e.rate_per_key,
               e.key_concurrency_limit
          FROM pgq.entrypoints e
         WHERE metrics.entrypoints IS NULL OR e.entrypoint = ANY (metrics.entrypoints)
    ), live AS (
        -- Index scans of the partial indexes, each stopped at the cap: due jobs (queued, then
        -- scheduled ones not promoted yet), delayed ones (scheduled, not due at `at`), and the
        -- oldest due job: the head of each lane (its first queued job past the lane's cursor,
        -- so a held horizon's dead entries behind the cursor are not walked) and the first of
        -- the scheduled index.
        SELECT e.entrypoint,
               least(v_cap, qd.n + sd.n) AS due,
               least(v_cap, sl.n) AS delayed,
               least(qp.oldest_due, so.oldest_due) AS oldest_due
          FROM eps e
         CROSS JOIN LATERAL (
               SELECT count(*) AS n
                 FROM (SELECT 1 FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'queued'
                        LIMIT v_cap) AS x) AS qd
         CROSS JOIN LATERAL (
               SELECT count(*) AS n
                 FROM (SELECT 1 FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'scheduled' AND j.slot = 4 AND j.run_at <= v_now
                        LIMIT v_cap) AS x) AS sd
         CROSS JOIN LATERAL (
               SELECT count(*) AS n
                 FROM (SELECT 1 FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'scheduled' AND j.slot = 4 AND j.run_at > v_now
                        LIMIT v_cap) AS x) AS sl
         CROSS JOIN LATERAL (
               SELECT min(j.run_at) FILTER (WHERE j.run_at <= v_now) AS oldest_due
                 FROM (SELECT j.run_at FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'scheduled' AND j.slot = 4
                        ORDER BY j.run_at LIMIT 1) AS j) AS so
         CROSS JOIN LATERAL (
               SELECT min(f.run_at) AS oldest_due
                 FROM pgq.lanes l
                CROSS JOIN LATERAL (
                      SELECT j.run_at FROM pgq.jobs j
                       WHERE j.entrypoint = l.entrypoint AND j.status = 'queued' AND j.priority = l.priority
                         AND j.ready_seq > coalesce(pg_sequence_last_value(l.cursor_seq), 0)
                       ORDER BY j.ready_seq LIMIT 1) AS f
                WHERE l.entrypoint = e.entrypoint) AS qp
    ), running AS (
        SELECT j.entrypoint, count(*) AS running,
               count(*) FILTER (WHERE j.heartbeat_at < v_now - e.heartbeat_timeout) AS stale
          FROM eps e
          JOIN pgq.jobs j ON j.entrypoint = e.entrypoint AND j.status = 'running'
         GROUP BY j.entrypoint
    ), buckets AS (
        SELECT m.*
          FROM pgq.metrics_buckets m
         WHERE m.bucket >= least(v_cur - interval '15 minutes', v_pstart) AND m.bucket < v_cur
           AND (metrics.entrypoints IS NULL OR m.entrypoint = ANY (metrics.entrypoints))
    ), windows AS (
        SELECT b.entrypoint,
               sum(b.successful) FILTER (WHERE b.bucket >= v_cur - interval '1 minute') AS successful_1m,
               sum(b.failed) FILTER (WHERE b.bucket >= v_cur - interval '1 minute') AS failed_1m,
               sum(b.canceled) FILTER (WHERE b.bucket >= v_cur - interval '1 minute') AS canceled_1m,
               sum(b.successful) FILTER (WHERE b.bucket >= v_cur - interval '5 minutes') AS successful_5m,
               sum(b.failed) FILTER (WHERE b.bucket >= v_cur - interval '5 minutes') AS failed_5m,
               sum(b.canceled) FILTER (WHERE b.bucket >= v_cur - interval '5 minutes') AS canceled_5m,
               sum(b.successful) FILTER (WHERE b.bucket >= v_cur - interval '15 minutes') AS successful_15m,
               sum(b.failed) FILTER (WHERE b.bucket >= v_cur - interval '15 minutes') AS failed_15m,
               sum(b.canceled) FILTER (WHERE b.bucket >= v_cur - interval '15 minutes') AS canceled_15m
          FROM buckets b
         GROUP BY b.entrypoint
    ), wait_hist AS (
        SELECT h.entrypoint,
               pgq._hist_quantiles(array_agg(h.bin ORDER BY h.bin), array_agg(h.n ORDER BY h.bin),
                                   '{0.5,0.95,0.99}') AS q
          FROM (SELECT b.entrypoint, u.bin, sum(u.n)::bigint AS n
                  FROM buckets b, unnest(b.wait_bins, b.wait_counts) AS u(bin, n)
                 WHERE b.bucket >= v_pstart
                 GROUP BY b.entrypoint, u.bin) AS h
         GROUP BY h.entrypoint
    ), run_hist AS (
        SELECT h.entrypoint,
               pgq._hist_quantiles(array_agg(h.bin ORDER BY h.bin), array_agg(h.n ORDER BY h.bin),
                                   '{0.5,0.95,0.99}') AS q
          FROM (SELECT b.entrypoint, u.bin, sum(u.n)::bigint AS n
                  FROM buckets b, unnest(b.run_bins, b.run_counts) AS u(bin, n)
                 WHERE b.bucket >= v_pstart
                 GROUP BY b.entrypoint, u.bin) AS h
         GROUP BY h.entrypoint
    ), servers AS (
        -- The registry (a few rows per worker): when each entrypoint's newest worker was last
        -- seen, and whether one of them is active at `at`.
        SELECT u.entrypoint,
               max(w.last_seen_at) AS last_seen_at,
               bool_or(w.last_seen_at >= v_now - w.timeout) AS active
          FROM pgq.workers w
         CROSS JOIN LATERAL unnest(w.entrypoints) AS u(entrypoint)
         WHERE metrics.entrypoints IS NULL OR u.entrypoint = ANY (metrics.entrypoints)
         GROUP BY u.entrypoint
    ), flow AS (
        -- Entrypoints with a rate or key limit only: what waits on the limit, not on a worker.
        SELECT e.entrypoint, rw.used, rk.used_up, kf.keys
          FROM eps e
          LEFT JOIN LATERAL (
               SELECT coalesce((SELECT w.used FROM pgq._rate_window(e.entrypoint, c_whole, v_now - e.rate_period) AS w), 0) AS used) AS rw
                 ON e.rate_limit IS NOT NULL AND NOT e.rate_per_key
          LEFT JOIN LATERAL (
               SELECT count(*) AS used_up
                 FROM (SELECT 1 FROM pgq.rate_starts s
                        WHERE s.entrypoint = e.entrypoint AND s.started_at > v_now - e.rate_period
                        GROUP BY s.key_hash
                       HAVING sum(s.tokens) >= e.rate_limit) AS x) AS rk
                 ON e.rate_limit IS NOT NULL AND e.rate_per_key
          LEFT JOIN LATERAL (
               SELECT array_agg(x.h) AS keys
                 FROM (SELECT hashtextextended(j.group_key, 0) AS h
                         FROM pgq.jobs j
                        WHERE j.entrypoint = e.entrypoint AND j.status = 'running' AND j.group_key IS NOT NULL
                        GROUP BY 1
                       HAVING count(*) >= e.key_concurrency_limit) AS x) AS kf
                 ON e.key_concurrency_limit IS NOT NULL
         WHERE e.rate_limit IS NOT NULL OR e.key_concurrency_limit IS NOT NULL
    ), totals AS (
        SELECT t.entrypoint,
               sum(t.jobs) FILTER (WHERE t.status = 'successful') AS successful_total,
               sum(t.jobs) FILTER (WHERE t.status = 'failed') AS failed_total,
               sum(t.jobs) FILTER (WHERE t.status = 'canceled') AS canceled_total
          FROM pgq.metrics_totals t
         WHERE metrics.entrypoints IS NULL OR t.entrypoint = ANY (metrics.entrypoints)
         GROUP BY t.entrypoint
    )
    SELECT e.entrypoint,
           e.paused_at IS NOT NULL,
           q.due + q.delayed,
           q.due,
           q.delayed,
           coalesce(r.running, 0),
           coalesce(r.stale, 0),
           coalesce(greatest(0, date_part('epoch', v_now - q.oldest_due)), 0),
           coalesce(w.successful_1m, 0)::bigint,
           coalesce(w.failed_1m, 0)::bigint,
           coalesce(w.canceled_1m, 0)::bigint,
           coalesce(w.successful_5m, 0)::bigint,
           coalesce(w.failed_5m, 0)::bigint,
           coalesce(w.canceled_5m, 0)::bigint,
           coalesce(w.successful_15m, 0)::bigint,
           coalesce(w.failed_15m, 0)::bigint,
           coalesce(w.canceled_15m, 0)::bigint,
           (coalesce(w.successful_1m, 0) + coalesce(w.failed_1m, 0) + coalesce(w.canceled_1m, 0))::float8 / 60,
           (coalesce(w.successful_5m, 0) + coalesce(w.failed_5m, 0) + coalesce(w.canceled_5m, 0))::float8 / 300,
           (coalesce(w.successful_15m, 0) + coalesce(w.failed_15m, 0) + coalesce(w.canceled_15m, 0))::float8 / 900,
           wh.q[1], wh.q[2], wh.q[3],
           rh.q[1], rh.q[2], rh.q[3],
           coalesce(t.successful_total, 0)::bigint,
           coalesce(t.failed_total, 0)::bigint,
           coalesce(t.canceled_total, 0)::bigint,
           (SELECT s.caught_up FROM pgq.metrics_state s),
           coalesce(sv.active, false) OR coalesce(r.running - r.stale, 0) > 0,
           CASE WHEN coalesce(sv.active, false) OR coalesce(r.running - r.stale, 0) > 0
                     OR q.oldest_due IS NULL THEN NULL
                ELSE greatest(0, date_part('epoch', v_now - greatest(q.oldest_due, sv.last_seen_at))) END,
           CASE WHEN f.used IS NOT NULL THEN greatest(e.rate_limit - f.used, 0)::bigint END,
           CASE WHEN f.used >= e.rate_limit
                THEN greatest(0, date_part('epoch', pgq._rate_due(e.entrypoint, e.rate_limit, e.rate_period, false, v_now) - v_now)) END,
           f.used_up,
           CASE WHEN e.key_concurrency_limit IS NOT NULL THEN coalesce(cardinality(f.keys), 0)::bigint END,
           CASE WHEN e.key_concurrency_limit IS NOT NULL
                THEN (SELECT count(*) FROM (SELECT 1 FROM pgq.jobs j
                                             WHERE hashtext(j.entrypoint) = hashtext(e.entrypoint)  -- (jobs_key_idx)
                                               AND j.entrypoint = e.entrypoint AND j.status = 'queued'
                                               AND j.group_key IS NOT NULL
                                               AND hashtextextended(j.group_key, 0) = ANY (f.keys)
                                             LIMIT v_cap) AS x) END
      FROM eps e
      JOIN live q ON q.entrypoint = e.entrypoint
      LEFT JOIN running r ON r.entrypoint = e.entrypoint
      LEFT JOIN windows w ON w.entrypoint = e.entrypoint
      LEFT JOIN wait_hist wh ON wh.entrypoint = e.entrypoint
      LEFT JOIN run_hist rh ON rh.entrypoint = e.entrypoint
      LEFT JOIN totals t ON t.entrypoint = e.entrypoint
      LEFT JOIN servers sv ON sv.entrypoint = e.entrypoint
      LEFT JOIN flow f ON f.entrypoint = e.entrypoint
     ORDER BY e.entrypoint;
END
$$;
COMMENT ON FUNCTION pgq.metrics(text[], interval, timestamptz) IS
    'Per entrypoint: paused, queued/due/delayed (due and delayed exact up to 10,000 each), running, stale, lag_s; finished per status over 1/5/15 min and throughput (10-second buckets); wait/run p50/p95/p99 over percentile_window; totals; served (a live worker serves it) and unserved_s; what waits on a rate or key limit. Advances the rollup first (bounded).';
