-- pgq.resume: claims go on with the policy as configured; stale jobs are re-claimed again.
BEGIN;
SELECT plan(11);

SELECT pgq.configure('re.a', concurrency_limit => 2, max_attempts => 9, backoff_base => interval '3 seconds');
SELECT pgq.enqueue_many(ARRAY['re.a', 're.a', 're.a', 're.b'], run_ats => array_fill(now() - interval '1 hour', ARRAY[4]));
SELECT count(*) FROM pgq.claim('99999999-9999-9999-9999-999999999999', '{re.b}', 1, now() - interval '10 minutes');
SELECT count(*) FROM pgq.pause('{re.a,re.b}');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{re.a,re.b}', 10, now())), 0,
          'paused: nothing claimed');

CREATE TEMP TABLE r AS SELECT * FROM pgq.resume('{re.b,re.a,re.unknown}');
SELECT results_eq($$SELECT entrypoint, paused_at, paused_by FROM r$$,
                  $$VALUES ('re.a'::text, NULL::timestamptz, NULL::text), ('re.b', NULL, NULL)$$,
                  'returns the known entrypoints, by name, no longer paused (unknown names ignored)');
SELECT row_eq($$SELECT concurrency_limit, max_attempts, backoff_base FROM r WHERE entrypoint = 're.a'$$,
              ROW(2, 9, interval '3 seconds'), 'the policy is exactly as configured before the pause');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.entrypoints WHERE entrypoint = 're.unknown'), 'resume creates no policy row');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{re.a}', 10, now())), 2,
          'claims again, within its concurrency limit of 2');
SELECT results_eq($$SELECT attempt FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{re.b}', 10, now())$$,
                  ARRAY[2], 'the stale job is re-claimed again (attempt 2)');

-- Resuming what is not paused changes nothing -----------------------------------------------------
SELECT updated_at AS before FROM pgq.entrypoints WHERE entrypoint = 're.a' \gset
SELECT is((SELECT paused_at FROM pgq.resume('{re.a}')), NULL, 'resuming an unpaused entrypoint: still not paused');
SELECT is((SELECT updated_at FROM pgq.entrypoints WHERE entrypoint = 're.a'), :'before'::timestamptz, 'and not even touched');

SELECT throws_ok($$SELECT * FROM pgq.resume(NULL)$$, 'PQ001', 'entrypoints must be a non-empty array, got NULL', 'NULL: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.resume('{}')$$, 'PQ001', NULL, 'empty: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.resume(ARRAY[E'a\tb'])$$, 'PQ001', NULL, 'a bad name: PQ001');

SELECT * FROM finish();
ROLLBACK;
