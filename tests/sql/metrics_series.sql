-- pgq.metrics_series: the last hour per minute (finished per status, the backlog sampled by the
-- rollup once a minute, wait and run p95), per entrypoint or combined. No BEGIN: the rollup
-- counts committed transactions only (the database is a throw-away clone).
SELECT plan(12);

CREATE TABLE ms_t AS SELECT timestamptz '2030-01-01 00:00:00+00' AS t0;
CREATE FUNCTION pg_temp.fin(ep text, status text, s timestamptz, f timestamptz) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    v_id bigint := pgq.enqueue(ep);
    v_lease bigint;
BEGIN
    UPDATE pgq.jobs SET enqueued_at = s - interval '1 second', run_at = s - interval '1 second' WHERE id = v_id;
    SELECT c.lease INTO STRICT v_lease FROM pgq.claim('11111111-1111-1111-1111-111111111111', ARRAY[ep], 1, s) c WHERE c.id = v_id;
    PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[v_id], ARRAY[v_lease], ARRAY[status], NULL, f);
END
$$;
SELECT pgq.configure('ms.a', max_attempts => 1);
-- Five minutes before t0: 2 successful (run 2 s) and 1 dead (run 8 s) of ms.a, 1 successful of ms.b.
SELECT pg_temp.fin('ms.a', 'successful', t0 - interval '302 seconds', t0 - interval '300 seconds') FROM ms_t;
SELECT pg_temp.fin('ms.a', 'successful', t0 - interval '292 seconds', t0 - interval '290 seconds') FROM ms_t;
SELECT pg_temp.fin('ms.a', 'failed', t0 - interval '298 seconds', t0 - interval '290 seconds') FROM ms_t;
SELECT pg_temp.fin('ms.b', 'successful', t0 - interval '301 seconds', t0 - interval '300 seconds') FROM ms_t;
-- Three jobs of ms.a due, then the rollup at t0 (counts the finished ones, samples the backlog).
SELECT pgq.enqueue('ms.a', run_at => t0 - interval '10 minutes') FROM ms_t, generate_series(1, 3);
SELECT rolled FROM pgq.rollup_metrics(at => (SELECT t0 + interval '5 seconds' FROM ms_t));

CREATE TABLE ms_a AS SELECT * FROM pgq.metrics_series('{ms.a}', at => (SELECT t0 + interval '20 seconds' FROM ms_t));
SELECT is((SELECT count(*)::int FROM ms_a), 60, 'sixty minutes of one series');
SELECT results_eq($$SELECT min(minute), max(minute) FROM ms_a$$,
                  $$SELECT t0 - interval '59 minutes', t0 FROM ms_t$$,
                  'from 59 minutes before the current minute to the current one (in progress)');
SELECT row_eq($$SELECT entrypoint, successful, failed, canceled FROM ms_a WHERE minute = (SELECT t0 - interval '5 minutes' FROM ms_t)$$,
              ROW('ms.a'::text, 2::bigint, 1::bigint, 0::bigint), 'finished per status in the minute they finished in');
SELECT ok((SELECT run_p95_s BETWEEN 7.79 AND 9.27 AND wait_p95_s BETWEEN 0.94 AND 1.16 FROM ms_a
            WHERE minute = (SELECT t0 - interval '5 minutes' FROM ms_t)),
          'run p95 of 2, 2 and 8 s: in the bin of 8 s; every wait was 1 s');
SELECT row_eq($$SELECT successful, due, running, run_p95_s FROM ms_a WHERE minute = (SELECT t0 - interval '4 minutes' FROM ms_t)$$,
              ROW(0::bigint, NULL::bigint, NULL::bigint, NULL::float8), 'a minute without jobs or sample: 0 finished, NULL backlog and p95');
SELECT row_eq($$SELECT due, running FROM ms_a WHERE minute = (SELECT t0 FROM ms_t)$$,
              ROW(3::bigint, 0::bigint), 'the backlog sampled by the rollup in the current minute');

SELECT row_eq($$SELECT entrypoint, successful, failed FROM pgq.metrics_series(combined => true, at => (SELECT t0 + interval '20 seconds' FROM ms_t))
                 WHERE minute = (SELECT t0 - interval '5 minutes' FROM ms_t)$$,
              ROW(NULL::text, 3::bigint, 1::bigint), 'combined: one series (entrypoint NULL) over every entrypoint');
SELECT is((SELECT count(*)::int FROM pgq.metrics_series(at => (SELECT t0 FROM ms_t))), 120, 'every entrypoint: one series each');

-- One sample per minute, whoever calls the rollup.
SELECT pgq.enqueue('ms.a', run_at => t0 - interval '10 minutes') FROM ms_t;
SELECT rolled FROM pgq.rollup_metrics(at => (SELECT t0 + interval '30 seconds' FROM ms_t));
SELECT is((SELECT due FROM pgq.metrics_series('{ms.a}', at => (SELECT t0 + interval '40 seconds' FROM ms_t)) WHERE minute = (SELECT t0 FROM ms_t)),
          3::bigint, 'a second rollup in the same minute takes no second sample');
SELECT rolled FROM pgq.rollup_metrics(at => (SELECT t0 + interval '61 seconds' FROM ms_t));
SELECT is((SELECT due FROM pgq.metrics_series('{ms.a}', at => (SELECT t0 + interval '70 seconds' FROM ms_t)) WHERE minute = (SELECT t0 + interval '1 minute' FROM ms_t)),
          4::bigint, 'the next minute''s first rollup samples again');

SELECT throws_ok($$SELECT * FROM pgq.metrics_series(combined => NULL)$$, 'PQ009',
                 'combined must be true or false, got NULL', 'combined NULL: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.metrics_series(at => 'infinity')$$, 'PQ009', NULL, 'at out of range: PQ009');

SELECT * FROM finish();
