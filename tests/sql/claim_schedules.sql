-- pgq.claim_schedules: due schedules only, one claimer at a time, takeover after fire_timeout.
BEGIN;
SELECT plan(10);

SELECT pgq.schedule('due', 'e', '* * * * *', '2030-01-01 10:01:00+00', fire_timeout => '20 seconds');
SELECT pgq.schedule('later', 'e', '0 * * * *', '2030-01-01 11:00:00+00');

SELECT is((SELECT count(*)::int FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 10, '2030-01-01 10:00:59+00')),
          0, 'nothing is due before next_run_at');
CREATE TEMP TABLE c1 AS
SELECT * FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 10, '2030-01-01 10:01:00+00');
SELECT results_eq($$SELECT name, entrypoint, due_at, db_now FROM c1$$,
                  $$VALUES ('due'::text, 'e'::text, '2030-01-01 10:01:00+00'::timestamptz, '2030-01-01 10:01:00+00'::timestamptz)$$,
                  'the due schedule is claimed with its due time and the clock');
SELECT results_eq($$SELECT state, worker_id, heartbeat_at, lease FROM pgq.schedules WHERE name = 'due'$$,
                  $$SELECT 'firing'::text, '11111111-1111-1111-1111-111111111111'::uuid, '2030-01-01 10:01:00+00'::timestamptz, lease FROM c1$$,
                  'claimed: firing, this worker, heartbeat, lease');
SELECT is((SELECT count(*)::int FROM pgq.claim_schedules('22222222-2222-2222-2222-222222222222', 10, '2030-01-01 10:01:19+00')),
          0, 'another scheduler cannot take it within fire_timeout');
CREATE TEMP TABLE c2 AS
SELECT * FROM pgq.claim_schedules('22222222-2222-2222-2222-222222222222', 10, '2030-01-01 10:01:21+00');
SELECT is((SELECT name FROM c2), 'due', 'after fire_timeout a silent claimer is taken over');
SELECT isnt((SELECT lease FROM c2), (SELECT lease FROM c1), 'the takeover gets a new lease');
SELECT is((SELECT due_at FROM c2), '2030-01-01 10:01:00+00'::timestamptz, 'the same tick is due');
SELECT is(pgq.next_schedule_at(), '2030-01-01 10:01:41+00'::timestamptz,
          'next_schedule_at: when the firing claimer would count as silent');

SELECT throws_ok($$SELECT * FROM pgq.claim_schedules(NULL)$$, 'PQ009', NULL, 'NULL worker: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.claim_schedules(gen_random_uuid(), 0)$$, 'PQ002', NULL, 'batch 0: PQ002');

SELECT * FROM finish();
ROLLBACK;
