-- pgq.rollup_metrics(max_rows, at)
-- Contract: counts newly finished jobs into the metrics rollup, exactly once each: history rows
--   are taken in the order of the transaction that wrote them (job_history.finished_xid), from
--   the watermark in pgq.metrics_state up to the oldest transaction of this database still
--   running (every transaction below it has ended, so its rows are final), at most about max_rows rows per
--   call (never splitting one transaction's rows; a single transaction larger than max_rows is
--   taken whole). Each row adds to its entrypoint's 10-second bucket of finished_at in
--   pgq.metrics_buckets (count per final status, wait and run time sums and log-bucketed
--   histograms) and to pgq.metrics_totals; then the watermark moves past the rows taken.
--   Buckets older than one hour are deleted (at most once a minute). The first call of each
--   minute (of `at`) also samples the live backlog for the charts: one row per entrypoint in
--   pgq.metrics_backlog (due counted as pgq.metrics does, at most 10,000, and running),
--   kept one hour. Returns the rows counted,
--   caught_up (every row below the horizon is counted now; rows of transactions after the
--   oldest one still running wait for it, so a long transaction delays the figures) and busy (another call holds the rollup: this
--   one did nothing and never waited). pgq.metrics calls it before reading; a maintenance loop
--   may call it too. at NULL means now() (the clock of the one-hour retention).
--   Histogram bins of a duration d seconds: 1 for d < 0.0001 (100 us), else
--   2 + floor(4 * log2(d / 0.0001)) up to 130 (from 429,497 s on): four bins per doubling,
--   each about 19 % wide.
-- Locking: the pgq.metrics_state row (FOR UPDATE SKIP LOCKED: concurrent callers skip, so two
--   scrapers never count a row twice); row locks on the buckets and totals it writes. Reads
--   job_history through its finished_xid index.
--   Call it in READ COMMITTED (autocommit): rows written by the calling transaction itself
--   are left for a later call.
-- Errors: PQ002 max_rows NULL or outside 1..1000000; PQ010 not READ COMMITTED.
CREATE OR REPLACE FUNCTION pgq.rollup_metrics(max_rows int DEFAULT 100000, at timestamptz DEFAULT NULL)
RETURNS TABLE (rolled bigint, caught_up boolean, busy boolean)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- The batch (up to max_rows rows) stays in memory; the grouping is hashed (a few thousand
-- groups: sorting the rows instead cost three times as much); no JIT for a bounded batch.
SET work_mem = '64MB'
SET enable_sort = off
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_now     timestamptz := coalesce(pgq._check_time(rollup_metrics.at, 'at'), now());
    v_state   pgq.metrics_state;
    v_horizon xid8;
    v_to      xid8;
    v_caught  boolean;
    v_n       bigint;
BEGIN
    IF rollup_metrics.max_rows IS NULL OR rollup_metrics.max_rows NOT BETWEEN 1 AND 1000000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 1000000, got %', coalesce(rollup_metrics.max_rows::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'pgq.rollup_metrics needs READ COMMITTED isolation, the transaction is %',
            current_setting('transaction_isolation')
            USING ERRCODE = 'PQ010';
    END IF;
    SELECT * INTO v_state FROM pgq.metrics_state s WHERE s.id FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 0::bigint, false, true;
        RETURN;
    END IF;

    -- The horizon: every transaction of this database with an xid below it has ended, so its
    -- history rows are final (committed and visible to the next statement, or never there).
    -- From a new snapshot (READ COMMITTED: taken after the lock above): its xmax, lowered to
    -- every xid still running except those of other databases and of autovacuum (they never
    -- write pgq tables), and to this transaction's own xid (its rows wait for the next call).
    WITH snap AS (
        SELECT pg_current_snapshot() AS s
    ), elsewhere AS (
        SELECT a.backend_xid AS x
          FROM pg_catalog.pg_stat_activity a
         WHERE a.backend_xid IS NOT NULL
           AND (a.backend_type = 'autovacuum worker'
                OR a.datid <> (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname = current_database()))
        UNION ALL
        SELECT p.transaction FROM pg_catalog.pg_prepared_xacts p WHERE p.database <> current_database()
    )
    SELECT least(pg_snapshot_xmax(snap.s), pg_current_xact_id(),
                 (SELECT min(r.x) FROM pg_snapshot_xip(snap.s) AS r(x)
                   WHERE NOT EXISTS (SELECT 1 FROM elsewhere e WHERE e.x = xid(r.x))))
      INTO v_horizon
      FROM snap;

    -- One pass: the next max_rows + 1 rows in xid order; if there are that many, the last
    -- transaction among them may be cut off, so this call stops before it (cut). A transaction
    -- larger than max_rows (cut = the watermark) is taken whole from the table. The rows are
    -- hashed into a few groups (entrypoint, bucket, status, wait bin, run bin); everything after
    -- works on those groups only.
    WITH batch AS MATERIALIZED (
        SELECT h.finished_xid AS x, h.entrypoint, h.status, h.finished_at,
               date_part('epoch', h.started_at - h.enqueued_at) AS wait_s,
               date_part('epoch', h.finished_at - h.started_at) AS run_s
          FROM pgq.job_history h
         WHERE h.finished_xid >= v_state.watermark AND h.finished_xid < v_horizon
         ORDER BY h.finished_xid
         LIMIT rollup_metrics.max_rows + 1
    ), cut AS (
        SELECT CASE WHEN count(*) > rollup_metrics.max_rows THEN max(b.x) END AS x FROM batch b
    ), taken AS (
        SELECT b.entrypoint, b.status, b.finished_at, b.wait_s, b.run_s
          FROM batch b, cut
         WHERE cut.x IS NULL OR b.x < cut.x
        UNION ALL
        SELECT h.entrypoint, h.status, h.finished_at, date_part('epoch', h.started_at - h.enqueued_at),
               date_part('epoch', h.finished_at - h.started_at)
          FROM cut, pgq.job_history h
         WHERE cut.x = v_state.watermark AND h.finished_xid = v_state.watermark
    ), grouped AS MATERIALIZED (
        SELECT t.entrypoint, t.status,
               date_bin(interval '10 seconds', t.finished_at, timestamptz '2000-01-01 00:00:00+00') AS bucket,
               -- 2 + floor(4 * log2(d / 0.0001)), as 4 / ln(2) * ln(d * 10000)
               CASE WHEN t.wait_s IS NULL THEN NULL WHEN t.wait_s < 0.0001 THEN 1
                    ELSE least(130, 2 + floor(5.770780163555854 * ln(t.wait_s * 10000))::int) END AS wait_bin,
               CASE WHEN t.run_s IS NULL THEN NULL WHEN t.run_s < 0.0001 THEN 1
                    ELSE least(130, 2 + floor(5.770780163555854 * ln(t.run_s * 10000))::int) END AS run_bin,
               count(*) AS n, sum(t.wait_s) AS wait_sum, sum(t.run_s) AS run_sum
          FROM taken t
         GROUP BY 1, 2, 3, 4, 5
    ), counts AS (
        SELECT g.entrypoint, g.bucket,
               coalesce(sum(g.n) FILTER (WHERE g.status = 'successful'), 0)::bigint AS successful,
               coalesce(sum(g.n) FILTER (WHERE g.status = 'failed'), 0)::bigint AS failed,
               coalesce(sum(g.n) FILTER (WHERE g.status = 'canceled'), 0)::bigint AS canceled,
               coalesce(sum(g.wait_sum), 0) AS wait_sum_s,
               coalesce(sum(g.run_sum), 0) AS run_sum_s
          FROM grouped g
         GROUP BY g.entrypoint, g.bucket
    ), wait_hist AS (
        SELECT w.entrypoint, w.bucket, array_agg(w.bin ORDER BY w.bin) AS bins, array_agg(w.n ORDER BY w.bin) AS counts
          FROM (SELECT g.entrypoint, g.bucket, g.wait_bin AS bin, sum(g.n)::bigint AS n
                  FROM grouped g WHERE g.wait_bin IS NOT NULL
                 GROUP BY 1, 2, 3) AS w
         GROUP BY w.entrypoint, w.bucket
    ), run_hist AS (
        SELECT r.entrypoint, r.bucket, array_agg(r.bin ORDER BY r.bin) AS bins, array_agg(r.n ORDER BY r.bin) AS counts
          FROM (SELECT g.entrypoint, g.bucket, g.run_bin AS bin, sum(g.n)::bigint AS n
                  FROM grouped g WHERE g.run_bin IS NOT NULL
                 GROUP BY 1, 2, 3) AS r
         GROUP BY r.entrypoint, r.bucket
    ), per_bucket AS (
        SELECT c.entrypoint, c.bucket, c.successful, c.failed, c.canceled, c.wait_sum_s, c.run_sum_s,
               coalesce(w.bins, '{}') AS wait_bins, coalesce(w.counts, '{}') AS wait_counts,
               coalesce(r.bins, '{}') AS run_bins, coalesce(r.counts, '{}') AS run_counts
          FROM counts c
          LEFT JOIN wait_hist w ON w.entrypoint = c.entrypoint AND w.bucket = c.bucket
          LEFT JOIN run_hist r ON r.entrypoint = c.entrypoint AND r.bucket = c.bucket
    ), totals AS (
        INSERT INTO pgq.metrics_totals AS t (entrypoint, status, jobs)
        SELECT g.entrypoint, g.status, sum(g.n)
          FROM grouped g
         GROUP BY g.entrypoint, g.status
         ORDER BY g.entrypoint, g.status
            ON CONFLICT (entrypoint, status) DO UPDATE SET jobs = t.jobs + excluded.jobs
    ), buckets AS (
        INSERT INTO pgq.metrics_buckets AS m (entrypoint, bucket, successful, failed, canceled, wait_sum_s,
                                              run_sum_s, wait_bins, wait_counts, run_bins, run_counts)
        SELECT p.entrypoint, p.bucket, p.successful, p.failed, p.canceled, p.wait_sum_s, p.run_sum_s,
               p.wait_bins, p.wait_counts, p.run_bins, p.run_counts
          FROM per_bucket p
         ORDER BY p.entrypoint, p.bucket
            ON CONFLICT (entrypoint, bucket) DO UPDATE
           SET successful = m.successful + excluded.successful,
               failed = m.failed + excluded.failed,
               canceled = m.canceled + excluded.canceled,
               wait_sum_s = m.wait_sum_s + excluded.wait_sum_s,
               run_sum_s = m.run_sum_s + excluded.run_sum_s,
               (wait_bins, wait_counts) = (SELECT coalesce(array_agg(u.bin ORDER BY u.bin), '{}'),
                                                  coalesce(array_agg(u.n ORDER BY u.bin), '{}')
                                             FROM (SELECT x.bin, sum(x.n)::bigint AS n
                                                     FROM unnest(m.wait_bins || excluded.wait_bins,
                                                                 m.wait_counts || excluded.wait_counts) AS x(bin, n)
                                                    GROUP BY x.bin) AS u),
               (run_bins, run_counts) = (SELECT coalesce(array_agg(u.bin ORDER BY u.bin), '{}'),
                                                coalesce(array_agg(u.n ORDER BY u.bin), '{}')
                                           FROM (SELECT x.bin, sum(x.n)::bigint AS n
                                                   FROM unnest(m.run_bins || excluded.run_bins,
                                                               m.run_counts || excluded.run_counts) AS x(bin, n)
                                                  GROUP BY x.bin) AS u)
    )
    SELECT coalesce(sum(g.n), 0), (SELECT c.x FROM cut c) INTO v_n, v_to FROM grouped g;
    v_caught := v_to IS NULL;
    v_to := CASE WHEN v_to IS NULL THEN greatest(v_horizon, v_state.watermark)
                 -- a whole transaction was taken: go on after it
                 WHEN v_to = v_state.watermark THEN (v_to::text::numeric + 1)::text::xid8
                 ELSE v_to END;

    UPDATE pgq.metrics_state s
       SET watermark = v_to,
           rolled_at = v_now,
           rows_rolled = s.rows_rolled + v_n,
           caught_up = v_caught,
           pruned_at = CASE WHEN s.pruned_at IS NULL OR s.pruned_at < v_now - interval '1 minute'
                            THEN v_now ELSE s.pruned_at END
     WHERE s.id;
    IF v_state.pruned_at IS NULL OR v_state.pruned_at < v_now - interval '1 minute' THEN
        DELETE FROM pgq.metrics_buckets m WHERE m.bucket < v_now - interval '1 hour 10 seconds';
    END IF;
    PERFORM pgq._sample_backlog(v_now);

    RETURN QUERY SELECT v_n, v_caught, false;
END
$$;
COMMENT ON FUNCTION pgq.rollup_metrics(int, timestamptz) IS
    'Counts newly finished jobs (history rows in transaction order, exactly once) into 10-second metric buckets and totals; at most about max_rows per call; never waits for another caller. Returns rolled, caught_up, busy.';
