-- pgq.metrics: live counts and lag, finished jobs over 1/5/15 minutes in whole 10-second buckets,
-- throughput, wait/run percentiles, totals, the entrypoint filter, read-only use. No BEGIN: the
-- rollup counts committed transactions only (the database is a throw-away clone).
SELECT plan(24);

CREATE TABLE me_t AS SELECT timestamptz '2030-01-01 00:00:00+00' AS t0;
-- A finished job of entrypoint ep: enqueued at e, started at s (NULL: canceled while queued), finished at f.
CREATE FUNCTION pg_temp.fin(ep text, status text, e timestamptz, s timestamptz, f timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint := pgq.enqueue(ep);
    v_lease bigint;
BEGIN
    UPDATE pgq.jobs SET enqueued_at = e, run_at = e WHERE id = v_id;
    IF s IS NULL THEN
        PERFORM pgq.cancel(ARRAY[v_id], f);
        RETURN;
    END IF;
    SELECT c.lease INTO STRICT v_lease FROM pgq.claim('11111111-1111-1111-1111-111111111111', ARRAY[ep], 1, s) c WHERE c.id = v_id;
    PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[v_id], ARRAY[v_lease], ARRAY[status], NULL, f);
END
$$;
SELECT pgq.configure('me.a', max_attempts => 1, heartbeat_timeout => interval '1 minute');
SELECT pgq.configure('me.b');
-- In the bucket before t0 (every window): 3 successful, run 1, 2 and 4 s, waited 0.5 s.
SELECT pg_temp.fin('me.a', 'successful', t0 - interval '15.5 seconds', t0 - interval '15 seconds', t0 - interval '14 seconds') FROM me_t;
SELECT pg_temp.fin('me.a', 'successful', t0 - interval '16.5 seconds', t0 - interval '16 seconds', t0 - interval '14 seconds') FROM me_t;
SELECT pg_temp.fin('me.a', 'successful', t0 - interval '18.5 seconds', t0 - interval '18 seconds', t0 - interval '14 seconds') FROM me_t;
-- 2 minutes before (5 and 15 minutes): 1 failed (dead), run 8 s, waited 0.5 s.
SELECT pg_temp.fin('me.a', 'failed', t0 - interval '130.5 seconds', t0 - interval '130 seconds', t0 - interval '122 seconds') FROM me_t;
-- 10 minutes before (15 minutes only): 2 canceled while queued (no wait or run sample).
SELECT pg_temp.fin('me.a', 'canceled', t0 - interval '11 minutes', NULL, t0 - interval '10 minutes') FROM me_t;
SELECT pg_temp.fin('me.a', 'canceled', t0 - interval '11 minutes', NULL, t0 - interval '10 minutes') FROM me_t;
-- 20 minutes before (no window) and in the current bucket (not complete: no window yet): 1 successful each.
SELECT pg_temp.fin('me.a', 'successful', t0 - interval '21 minutes', t0 - interval '21 minutes', t0 - interval '20 minutes') FROM me_t;
SELECT pg_temp.fin('me.a', 'successful', t0, t0, t0 + interval '1 second') FROM me_t;
-- Live jobs at t0 + 5 s: running fresh, running stale (heartbeat 2 minutes old), due (run_at t0-30 s and t0-10 s), delayed.
SELECT pgq.enqueue('me.a', run_at => t0 - interval '10 minutes') FROM me_t;
SELECT pgq.enqueue('me.a', run_at => t0 - interval '10 minutes') FROM me_t;
SELECT count(*) FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{me.a}', 1, (SELECT t0 FROM me_t));
SELECT count(*) FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{me.a}', 1, (SELECT t0 - interval '2 minutes' FROM me_t));
SELECT pgq.enqueue('me.a', run_at => t0 - interval '30 seconds') FROM me_t;
SELECT pgq.enqueue('me.a', run_at => t0 - interval '10 seconds') FROM me_t;
SELECT pgq.enqueue('me.a', run_at => t0 + interval '1 hour') FROM me_t;

CREATE TABLE me_r AS SELECT * FROM pgq.metrics(at => (SELECT t0 + interval '5 seconds' FROM me_t));
SELECT results_eq($$SELECT entrypoint, paused, queued, due, delayed, running, stale, lag_s FROM me_r WHERE entrypoint LIKE 'me.%'$$,
                  $$VALUES ('me.a'::text, false, 3::bigint, 2::bigint, 1::bigint, 2::bigint, 1::bigint, 35::float8),
                           ('me.b', false, 0, 0, 0, 0, 0, 0)$$,
                  'live: queued 3 = due 2 + delayed 1, running 2 (1 stale), lag_s 35 (oldest due since t0-30s, at t0+5s)');
SELECT row_eq($$SELECT successful_1m, failed_1m, canceled_1m, successful_5m, failed_5m, canceled_5m,
                       successful_15m, failed_15m, canceled_15m FROM me_r WHERE entrypoint = 'me.a'$$,
              ROW(3::bigint, 0::bigint, 0::bigint, 3::bigint, 1::bigint, 0::bigint, 3::bigint, 1::bigint, 2::bigint),
              'finished per status over 1, 5 and 15 minutes of complete buckets (the current bucket and older jobs left out)');
SELECT row_eq($$SELECT throughput_1m, throughput_5m, throughput_15m FROM me_r WHERE entrypoint = 'me.a'$$,
              ROW(3 / 60.0::float8, 4 / 300.0::float8, 6 / 900.0::float8), 'throughput: finished jobs per second of each window');
SELECT row_eq($$SELECT successful_total, failed_total, canceled_total, rollup_caught_up FROM me_r WHERE entrypoint = 'me.a'$$,
              ROW(5::bigint, 1::bigint, 2::bigint, true), 'totals: every finished job counted, caught up');
SELECT ok((SELECT wait_p50_s BETWEEN 0.487 AND 0.580 AND wait_p99_s BETWEEN 0.487 AND 0.580 FROM me_r WHERE entrypoint = 'me.a'),
          'wait percentiles: every wait was 0.5 s; the answers lie in its bin');
SELECT ok((SELECT run_p50_s BETWEEN 1.94 AND 2.32 FROM me_r WHERE entrypoint = 'me.a'),
          'run p50 of 1, 2, 4, 8 s over 5 minutes: in the bin of 2 s');
SELECT ok((SELECT run_p95_s BETWEEN 7.79 AND 9.27 AND run_p99_s BETWEEN 7.79 AND 9.27 FROM me_r WHERE entrypoint = 'me.a'),
          'run p95 and p99: in the bin of 8 s');
SELECT row_eq($$SELECT wait_p50_s, run_p50_s, successful_total FROM me_r WHERE entrypoint = 'me.b'$$,
              ROW(NULL::float8, NULL::float8, 0::bigint), 'no samples: NULL percentiles, zero totals');
SELECT ok((SELECT run_p99_s BETWEEN 3.89 AND 4.63 FROM pgq.metrics('{me.a}', interval '20 seconds', (SELECT t0 + interval '5 seconds' FROM me_t))),
          'percentile_window 20 seconds: the last two buckets (1, 2, 4 s): p99 in the bin of 4 s');
SELECT ok((SELECT run_p99_s BETWEEN 3.89 AND 4.63 FROM pgq.metrics('{me.a}', interval '11 seconds', (SELECT t0 + interval '5 seconds' FROM me_t))),
          'a window of 11 s is rounded up to whole buckets (20 s)');
SELECT results_eq($$SELECT entrypoint FROM pgq.metrics('{me.b,me.none}')$$, ARRAY['me.b'],
                  'entrypoints: only those given (unknown ones have no row)');
SELECT is((SELECT successful_1m FROM pgq.metrics('{me.a}', at => (SELECT t0 + interval '50 seconds' FROM me_t))), 1::bigint,
          '45 seconds later the last minute is the buckets t0-10s to t0+40s: the job of bucket t0 is in, the three of t0-20s are out');

-- Read-only: no rollup, the figures as they were ---------------------------------------------------
SELECT pg_temp.fin('me.b', 'successful', t0, t0, t0 + interval '1 second') FROM me_t;
BEGIN READ ONLY;
SELECT is((SELECT successful_total FROM pgq.metrics('{me.b}')), 0::bigint, 'in a read-only transaction: read, no rollup');
COMMIT;
SELECT is((SELECT successful_total FROM pgq.metrics('{me.b}')), 1::bigint, 'the next read-write call rolls up first');

-- Queued jobs of several priorities: queued means due (promoted); lag from the lanes' heads --------
SELECT count(*) FROM pgq.enqueue_many('{mx.prio,mx.prio,mx.prio}', priorities => '{5,0,0}');
UPDATE pgq.jobs j SET run_at = t.t0 + v.d
  FROM me_t t, (SELECT id, (ARRAY[interval '-20 seconds', interval '-40 seconds', interval '30 seconds'])[row_number() OVER (ORDER BY id)] AS d
                  FROM pgq.jobs WHERE entrypoint = 'mx.prio') AS v
 WHERE j.id = v.id;
SELECT row_eq($$SELECT queued, due, delayed, lag_s FROM pgq.metrics('{mx.prio}', at => (SELECT t0 + interval '5 seconds' FROM me_t))$$,
              ROW(3::bigint, 3::bigint, 0::bigint, 45::float8),
              'queued jobs are due; the oldest due one is the head of a lower-priority lane (lag 45 s)');

-- The cap: due and delayed are exact up to 10,000 each ------------------------------------------------
SELECT count(*) FROM pgq.enqueue_many(array_fill('mx.cap'::text, ARRAY[10000]));
SELECT count(*) FROM pgq.enqueue_many(array_fill('mx.cap'::text, ARRAY[10000]), delays => array_fill(interval '1 hour', ARRAY[10000]));
CREATE TABLE mx_t AS SELECT now() AS t1;
UPDATE pgq.jobs SET run_at = (SELECT t1 - interval '1 minute' FROM mx_t)
 WHERE id = (SELECT min(id) FROM pgq.jobs WHERE entrypoint = 'mx.cap');
SELECT row_eq($$SELECT queued, due, delayed, lag_s FROM pgq.metrics('{mx.cap}', at => (SELECT t1 + interval '1 second' FROM mx_t))$$,
              ROW(20000::bigint, 10000::bigint, 10000::bigint, 61::float8), '10,000 due and 10,000 delayed: exact');
SELECT count(*) FROM pgq.enqueue_many(array_fill('mx.cap'::text, ARRAY[5]));
SELECT count(*) FROM pgq.enqueue_many(array_fill('mx.cap'::text, ARRAY[5]), delays => array_fill(interval '1 hour', ARRAY[5]));
SELECT row_eq($$SELECT queued, due, delayed, lag_s FROM pgq.metrics('{mx.cap}', at => (SELECT t1 + interval '1 second' FROM mx_t))$$,
              ROW(20000::bigint, 10000::bigint, 10000::bigint, 61::float8),
              'more than 10,000 due and delayed: each reads 10,000; lag_s stays exact');

-- Served: does a live worker serve the entrypoint, and for how long has due work waited unserved --
SELECT pgq.enqueue('sv.x', run_at => t0 - interval '100 seconds') FROM me_t;
SELECT row_eq($$SELECT served, unserved_s FROM pgq.metrics('{sv.x}', at => (SELECT t0 + interval '5 seconds' FROM me_t))$$,
              ROW(false, 105::float8), 'no worker ever served it: unserved since its oldest due job became due (105 s, = lag_s)');
SELECT pgq.register_worker('aaaaaaaa-0000-0000-0000-000000000001', '{sv.x,sv.y}', timeout => interval '30 seconds', at => t0 - interval '60 seconds') FROM me_t;
SELECT row_eq($$SELECT served, unserved_s FROM pgq.metrics('{sv.x}', at => (SELECT t0 + interval '5 seconds' FROM me_t))$$,
              ROW(false, 65::float8), 'its worker was last seen at t0-60s and is gone (timeout 30 s): unserved for 65 s');
SELECT pgq.register_worker('aaaaaaaa-0000-0000-0000-000000000002', '{sv.x}', timeout => interval '30 seconds', at => t0) FROM me_t;
SELECT results_eq($$SELECT entrypoint, served, unserved_s FROM pgq.metrics('{sv.x,me.a,me.b}', at => (SELECT t0 + interval '5 seconds' FROM me_t))$$,
                  $$VALUES ('me.a'::text, true, NULL::float8), ('me.b', false, NULL), ('sv.x', true, NULL)$$,
                  'served: a live registered worker (sv.x) or a running job with a fresh heartbeat (me.a, no registry); '
                  'nothing due (me.b): unserved_s NULL');
SELECT row_eq($$SELECT served, unserved_s FROM pgq.metrics('{sv.x}', at => (SELECT t0 + interval '50 seconds' FROM me_t))$$,
              ROW(false, 50::float8), 'at t0+50s its last worker is gone too: unserved since it was last seen (t0)');

-- Errors ------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM pgq.metrics(percentile_window => interval '2 hours')$$, 'PQ009',
                 'percentile_window must be between 10 seconds and 1 hour, got 02:00:00', 'a window over 1 hour: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.metrics(percentile_window => NULL)$$, 'PQ009', NULL, 'NULL window: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.metrics(percentile_window => interval '1 second')$$, 'PQ009', NULL, 'a window under 10 s: PQ009');

SELECT * FROM finish();
