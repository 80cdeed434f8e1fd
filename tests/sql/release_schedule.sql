-- pgq.release_schedule: a schedule that cannot be fired is given back alone (idle, due time kept,
-- error kept, not claimed before retry_at); the others of the batch fire; lease-guarded.
BEGIN;
SELECT plan(12);

SELECT pgq.schedule('rs.bad', 'rs.job', '* * * * *', '2030-01-01 10:00:00+00');
SELECT pgq.schedule('rs.good', 'rs.job', '* * * * *', '2030-01-01 10:00:00+00');
CREATE TEMP TABLE c AS SELECT * FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 10, '2030-01-01 10:00:05+00');
SELECT is((SELECT count(*)::int FROM c), 2, 'setup: both claimed in one batch');

SELECT is(pgq.release_schedule('22222222-2222-2222-2222-222222222222', 'rs.bad', (SELECT lease FROM c WHERE name = 'rs.bad'),
                               'boom', at => '2030-01-01 10:00:06+00'),
          'lost', 'another worker''s release: lost');
SELECT is(pgq.release_schedule('11111111-1111-1111-1111-111111111111', 'rs.bad', (SELECT lease FROM c WHERE name = 'rs.bad'),
                               'no next time for ''0 0 31 2 *''', at => '2030-01-01 10:00:06+00'),
          'released', 'the claimer releases it');
SELECT results_eq(
    $$SELECT state, lease, worker_id, next_run_at, retry_at, last_error FROM pgq.schedules WHERE name = 'rs.bad'$$,
    $$VALUES ('idle'::text, NULL::bigint, NULL::uuid, '2030-01-01 10:00:00+00'::timestamptz,
              '2030-01-01 10:01:06+00'::timestamptz, 'no next time for ''0 0 31 2 *''')$$,
    'idle, due time kept, retry in a minute, the error kept');
SELECT is((SELECT state FROM pgq.fire_schedule('11111111-1111-1111-1111-111111111111', 'rs.good', (SELECT lease FROM c WHERE name = 'rs.good'),
                                                '2030-01-01 10:01:00+00', at => '2030-01-01 10:00:07+00')),
          'fired', 'the other schedule of the batch fires');
SELECT is(pgq.release_schedule('11111111-1111-1111-1111-111111111111', 'rs.bad', (SELECT lease FROM c WHERE name = 'rs.bad')),
          'lost', 'releasing twice: lost (the lease was spent)');
SELECT is((SELECT count(*)::int FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 10, '2030-01-01 10:01:05+00')
            WHERE name = 'rs.bad'), 0, 'not claimed again before retry_at');
SELECT is(pgq.next_schedule_at(), '2030-01-01 10:01:06+00'::timestamptz,
          'next_schedule_at: the released one''s retry_at (the good one is firing until 10:01:35)');
CREATE TEMP TABLE c2 AS SELECT * FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 10, '2030-01-01 10:01:06+00')
                        WHERE name = 'rs.bad';
SELECT is((SELECT count(*)::int FROM c2), 1, 'claimed again at retry_at');
SELECT is((SELECT state FROM pgq.fire_schedule('11111111-1111-1111-1111-111111111111', 'rs.bad', (SELECT lease FROM c2),
                                                '2030-01-01 10:01:00+00', at => '2030-01-01 10:01:07+00')),
          'fired', 'and fires');
SELECT results_eq($$SELECT retry_at, last_error FROM pgq.schedules WHERE name = 'rs.bad'$$,
                  $$VALUES (NULL::timestamptz, NULL::text)$$, 'a fire clears retry_at and last_error');
SELECT throws_ok($$SELECT pgq.release_schedule('11111111-1111-1111-1111-111111111111', 'rs.bad', 1, retry_after => '2 days')$$,
                 'PQ008', 'retry_after must be between 00:00:01 and 1 day, got 2 days', 'retry_after over a day: PQ008');

SELECT * FROM finish();
ROLLBACK;
