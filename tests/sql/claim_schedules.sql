-- pgq.claim_schedules: due schedules only, one claimer at a time, takeover after fire_timeout.
BEGIN;
SELECT plan(18);

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

-- A schedule nobody serves: a registered scheduler leaves it due (no job piles up) until a
-- live worker serves its entrypoint; an unregistered claimer fires every schedule, as before.
SELECT pgq.schedule('orphan', 'nobody.serves', '* * * * *', '2030-01-01 12:00:00+00');
SELECT pgq.register_worker('33333333-3333-3333-3333-333333333333', ARRAY['e'], at => '2030-01-01 12:00:00+00');
SELECT is((SELECT count(*)::int FROM pgq.claim_schedules('33333333-3333-3333-3333-333333333333', 10, '2030-01-01 12:00:05+00') c
            WHERE c.name = 'orphan'),
          0, 'a registered scheduler does not claim a schedule whose entrypoint no live worker serves');
-- (that claim took 'due' over and claimed 'later': firing until 12:00:25 and later)
SELECT is(pgq.next_schedule_at('33333333-3333-3333-3333-333333333333', '2030-01-01 12:00:05+00'),
          '2030-01-01 12:00:25+00'::timestamptz,
          'next_schedule_at(worker): the orphan, due since 12:00, does not wake it');
SELECT is(pgq.next_schedule_at(), '2030-01-01 12:00:00+00'::timestamptz, 'next_schedule_at(): every schedule, as before');
SELECT is((SELECT state FROM pgq.schedules WHERE name = 'orphan'), 'idle', 'the orphan stays idle and due');
-- A worker serving the entrypoint starts (a scheduler-only process fires for it).
SELECT pgq.register_worker('44444444-4444-4444-4444-444444444444', ARRAY['nobody.serves'], at => '2030-01-01 12:00:10+00');
SELECT is((SELECT count(*)::int FROM pgq.claim_schedules('33333333-3333-3333-3333-333333333333', 10, '2030-01-01 12:00:20+00') c
            WHERE c.name = 'orphan'),
          1, 'once a live worker serves the entrypoint, any registered scheduler claims it');
SELECT pgq.release_schedule('33333333-3333-3333-3333-333333333333', 'orphan',
                            (SELECT lease FROM pgq.schedules WHERE name = 'orphan'), 'test', interval '1 second', '2030-01-01 12:00:20+00');
SELECT is((SELECT count(*)::int FROM pgq.claim_schedules('33333333-3333-3333-3333-333333333333', 10, '2030-01-01 12:01:00+00') c
            WHERE c.name = 'orphan'),
          0, 'its worker gone (silent past its 30 s timeout): the schedule waits again');
SELECT is((SELECT count(*)::int FROM pgq.claim_schedules('55555555-5555-5555-5555-555555555555', 10, '2030-01-01 12:01:00+00') c
            WHERE c.name = 'orphan'),
          1, 'an unregistered claimer (psql, a 0.1.0 worker) fires it as before');
SELECT throws_ok($$SELECT pgq.next_schedule_at(gen_random_uuid(), 'infinity')$$, 'PQ009', NULL, 'next_schedule_at: at out of range, PQ009');

SELECT throws_ok($$SELECT * FROM pgq.claim_schedules(NULL)$$, 'PQ009', NULL, 'NULL worker: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.claim_schedules(gen_random_uuid(), 0)$$, 'PQ002', NULL, 'batch 0: PQ002');

SELECT * FROM finish();
ROLLBACK;
