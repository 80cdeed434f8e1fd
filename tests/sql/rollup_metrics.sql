-- pgq.rollup_metrics: finished jobs counted exactly once into 10-second buckets and totals, in
-- transaction order, bounded per call, rows of the caller's own transaction left for later,
-- one-hour retention. No BEGIN: the rollup only counts committed transactions, so every
-- statement here commits on its own (the database is a throw-away clone).
SELECT plan(31);

SELECT has_table('pgq', 'metrics_buckets', 'table pgq.metrics_buckets');
SELECT has_table('pgq', 'metrics_totals', 'table pgq.metrics_totals');
SELECT has_column('pgq', 'job_history', 'finished_xid', 'job_history.finished_xid');
SELECT col_default_is('pgq', 'job_history', 'finished_xid', 'pg_current_xact_id()',
                      'finished_xid defaults to the writing transaction (no change to the archive path)');
SELECT is(pg_get_indexdef('pgq.job_history_finished_xid_idx'::regclass),
          'CREATE INDEX job_history_finished_xid_idx ON pgq.job_history USING btree (finished_xid) WHERE (finished_xid IS NOT NULL)',
          'the rollup reads history through finished_xid');
SELECT row_eq($$SELECT * FROM pgq.rollup_metrics()$$, ROW(0::bigint, true, false), 'nothing finished yet: rolled 0, caught up');

-- A history row from before this release (no finished_xid) is never counted.
INSERT INTO pgq.job_history (id, entrypoint, status, priority, attempt, enqueued_at, finished_at, finished_xid)
VALUES (-1, 'ru.old', 'successful', 0, 1, now(), now(), NULL);

-- Jobs finished at controlled times (t0 = 2030-01-01 00:00:00 UTC):
--   ru.a #1 successful: enqueued t0-10s, started t0, finished t0+2s   -> bucket t0, wait 10 s, run 2 s
--   ru.a #2 failed (dead): started t0, finished t0+12s               -> bucket t0+10s, wait 10 s, run 12 s
--   ru.a #3 canceled while running: started t0, finished t0+12s      -> bucket t0+10s, wait 10 s, run 12 s
--   ru.b #4 canceled while queued at t0+15s: no start                -> bucket t0+10s, no samples
CREATE TABLE ru_t AS SELECT timestamptz '2030-01-01 00:00:00+00' AS t0;
SELECT pgq.configure('ru.a', max_attempts => 1);
CREATE TABLE ru_ids AS
SELECT * FROM pgq.enqueue_many(ARRAY['ru.a', 'ru.a', 'ru.a', 'ru.b']) WITH ORDINALITY AS e(id, n);
UPDATE pgq.jobs SET enqueued_at = (SELECT t0 FROM ru_t) - interval '10 seconds',
                    run_at = (SELECT t0 FROM ru_t) - interval '10 seconds'
 WHERE entrypoint IN ('ru.a', 'ru.b');
CREATE TABLE ru_c AS
SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{ru.a}', 3, (SELECT t0 FROM ru_t));
SELECT count(*) FROM pgq.complete('11111111-1111-1111-1111-111111111111',
                                  ARRAY(SELECT id FROM ru_c c JOIN ru_ids i USING (id) WHERE i.n = 1),
                                  ARRAY(SELECT lease FROM ru_c c JOIN ru_ids i USING (id) WHERE i.n = 1),
                                  '{successful}', jsonb_build_array('{"result": 1}'::jsonb), (SELECT t0 FROM ru_t) + interval '2 seconds');
SELECT count(*) FROM pgq.cancel(ARRAY(SELECT id FROM ru_ids WHERE n IN (3, 4)), (SELECT t0 FROM ru_t) + interval '15 seconds');
SELECT count(*) FROM pgq.complete('11111111-1111-1111-1111-111111111111',
                                  ARRAY(SELECT id FROM ru_c c JOIN ru_ids i USING (id) WHERE i.n IN (2, 3) ORDER BY i.n),
                                  ARRAY(SELECT lease FROM ru_c c JOIN ru_ids i USING (id) WHERE i.n IN (2, 3) ORDER BY i.n),
                                  '{failed,failed}', NULL, (SELECT t0 FROM ru_t) + interval '12 seconds');
SELECT results_eq($$SELECT h.status FROM pgq.job_history h JOIN ru_ids i USING (id) ORDER BY i.n$$,
                  ARRAY['successful', 'failed', 'canceled', 'canceled'], 'setup: the four jobs are in history');

SELECT row_eq($$SELECT * FROM pgq.rollup_metrics(at => (SELECT t0 FROM ru_t) + interval '30 seconds')$$,
              ROW(4::bigint, true, false), 'the four finished jobs are counted, the old row is not');
SELECT results_eq(
    $$SELECT entrypoint, bucket - (SELECT t0 FROM ru_t), successful, failed, canceled, wait_sum_s, run_sum_s,
             wait_bins, wait_counts, run_bins, run_counts
        FROM pgq.metrics_buckets ORDER BY entrypoint, bucket$$,
    $$VALUES ('ru.a'::text, interval '0', 1::bigint, 0::bigint, 0::bigint, 10::float8, 2::float8,
              '{68}'::int[], '{1}'::bigint[], '{59}'::int[], '{1}'::bigint[]),
             ('ru.a', interval '10 seconds', 0, 1, 1, 20, 24, '{68}', '{2}', '{69}', '{2}'),
             ('ru.b', interval '10 seconds', 0, 0, 1, 0, 0, '{}', '{}', '{}', '{}')$$,
    'per entrypoint and 10-second bucket: counts per status, sums, histograms (10 s: bin 68, 2 s: 59, 12 s: 69)');
SELECT results_eq($$SELECT entrypoint, status, jobs FROM pgq.metrics_totals ORDER BY 1, 2$$,
                  $$VALUES ('ru.a'::text, 'canceled'::text, 1::bigint), ('ru.a', 'failed', 1), ('ru.a', 'successful', 1),
                           ('ru.b', 'canceled', 1)$$,
                  'totals per entrypoint and status');
SELECT row_eq($$SELECT rows_rolled, caught_up, rolled_at FROM pgq.metrics_state$$,
              ROW(4::bigint, true, (SELECT t0 FROM ru_t) + interval '30 seconds'), 'the state records the progress');

-- Exactly once: a second call counts nothing -----------------------------------------------------
SELECT row_eq($$SELECT * FROM pgq.rollup_metrics(at => (SELECT t0 FROM ru_t) + interval '31 seconds')$$,
              ROW(0::bigint, true, false), 'again: nothing new');
SELECT is((SELECT sum(jobs)::int FROM pgq.metrics_totals), 4, 'totals unchanged');

-- New rows merge into an existing bucket -----------------------------------------------------------
SELECT pgq.enqueue('ru.a') AS j5 \gset
UPDATE pgq.jobs SET enqueued_at = (SELECT t0 FROM ru_t) - interval '1 second', run_at = (SELECT t0 FROM ru_t) - interval '1 second'
 WHERE id = :j5;
SELECT lease AS l5 FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{ru.a}', 1, (SELECT t0 FROM ru_t) + interval '1 second') \gset
SELECT count(*) FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:j5]::bigint[], ARRAY[:l5]::bigint[],
                                  '{successful}', NULL, (SELECT t0 FROM ru_t) + interval '1.05 seconds');
SELECT row_eq($$SELECT * FROM pgq.rollup_metrics(at => (SELECT t0 FROM ru_t) + interval '32 seconds')$$,
              ROW(1::bigint, true, false), 'one more job');
SELECT row_eq($$SELECT successful, wait_sum_s, run_sum_s, wait_bins, wait_counts, run_bins, run_counts
                  FROM pgq.metrics_buckets WHERE entrypoint = 'ru.a' AND bucket = (SELECT t0 FROM ru_t)$$,
              ROW(2::bigint, 12::float8, 2.05::float8, '{59,68}'::int[], '{1,1}'::bigint[], '{37,59}'::int[], '{1,1}'::bigint[]),
              'merged into the bucket: counts and sums added, histograms merged bin by bin (wait 2 s: 59, run 50 ms: 37)');

-- Bounded per call, never splitting a transaction ---------------------------------------------------
SELECT pgq.configure('ru.n', max_attempts => 1);
DO $$
DECLARE
    c record;
BEGIN
    PERFORM pgq.enqueue_many(array_fill('ru.n'::text, ARRAY[12]));
    COMMIT;
    -- 7 transactions of one job each, then one transaction of 5 jobs
    FOR i IN 1..7 LOOP
        SELECT * INTO c FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{ru.n}', 1);
        PERFORM pgq.complete('22222222-2222-2222-2222-222222222222', ARRAY[c.id], ARRAY[c.lease], '{successful}');
        COMMIT;
    END LOOP;
    PERFORM pgq.complete('22222222-2222-2222-2222-222222222222', array_agg(x.id), array_agg(x.lease),
                         array_fill('successful'::text, ARRAY[5]))
       FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{ru.n}', 5) x;
END
$$;
SELECT row_eq($$SELECT * FROM pgq.rollup_metrics(3)$$, ROW(3::bigint, false, false), 'max_rows 3: three rows, not caught up');
SELECT row_eq($$SELECT * FROM pgq.rollup_metrics(3)$$, ROW(3::bigint, false, false), 'three more');
SELECT row_eq($$SELECT * FROM pgq.rollup_metrics(3)$$, ROW(1::bigint, false, false),
              'the 7th single job; the five of one transaction would pass max_rows: left for the next call');
SELECT row_eq($$SELECT * FROM pgq.rollup_metrics(3)$$, ROW(5::bigint, false, false),
              'one transaction larger than max_rows is taken whole (caught_up false: call again)');
SELECT row_eq($$SELECT * FROM pgq.rollup_metrics(3)$$, ROW(0::bigint, true, false), 'then caught up');
SELECT is((SELECT jobs FROM pgq.metrics_totals WHERE entrypoint = 'ru.n'), 12::bigint, 'every job counted once');

-- Rows of the caller's own transaction wait for a later call ---------------------------------------
BEGIN;
SELECT pgq.enqueue('ru.own') AS own \gset
SELECT id AS own, lease AS own_l FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{ru.own}') \gset
SELECT count(*) FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[:own]::bigint[], ARRAY[:own_l]::bigint[], '{successful}');
SELECT is((SELECT rolled FROM pgq.rollup_metrics()), 0::bigint, 'a job finished in the calling transaction is not counted yet');
COMMIT;
SELECT is((SELECT rolled FROM pgq.rollup_metrics()), 1::bigint, 'after its commit, the next call counts it');
SELECT is((SELECT jobs FROM pgq.metrics_totals WHERE entrypoint = 'ru.own'), 1::bigint, 'once');

-- A rolled-back transaction leaves nothing behind ----------------------------------------------------
BEGIN;
SELECT pgq.enqueue('ru.rb') AS rb \gset
SELECT id AS rb, lease AS rb_l FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{ru.rb}') \gset
SELECT count(*) FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[:rb]::bigint[], ARRAY[:rb_l]::bigint[], '{successful}');
ROLLBACK;
SELECT is((SELECT rolled FROM pgq.rollup_metrics()), 0::bigint, 'a rolled-back completion is never counted');

-- Retention: buckets older than an hour go ---------------------------------------------------------
SELECT is((SELECT count(*)::int FROM pgq.metrics_buckets WHERE bucket BETWEEN (SELECT t0 FROM ru_t) AND (SELECT t0 FROM ru_t) + interval '1 minute'), 3,
          'setup: three buckets around t0');
SELECT pgq.rollup_metrics(at => (SELECT t0 FROM ru_t) + interval '2 hours');
SELECT is((SELECT count(*)::int FROM pgq.metrics_buckets WHERE bucket BETWEEN (SELECT t0 FROM ru_t) AND (SELECT t0 FROM ru_t) + interval '1 minute'), 0,
          'two hours later they are deleted');
SELECT is((SELECT jobs FROM pgq.metrics_totals WHERE entrypoint = 'ru.a' AND status = 'successful'), 2::bigint,
          'totals are kept');

-- Errors ------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM pgq.rollup_metrics(0)$$, 'PQ002', 'max_rows must be between 1 and 1000000, got 0', 'max_rows 0: PQ002');
SELECT throws_ok($$SELECT * FROM pgq.rollup_metrics(NULL)$$, 'PQ002', NULL, 'max_rows NULL: PQ002');
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT throws_ok($$SELECT * FROM pgq.rollup_metrics()$$, 'PQ010',
                 'pgq.rollup_metrics needs READ COMMITTED isolation, the transaction is repeatable read',
                 'REPEATABLE READ: PQ010');
COMMIT;  -- not ROLLBACK: that would also undo pgTAP's record of the test

SELECT * FROM finish();
