-- pgq.fire_schedule: one job per tick, lease-guarded, catch-up policy, next run stored.
BEGIN;
SELECT plan(21);

SELECT pgq.schedule('tick', 'tick_job', '* * * * *', '2030-01-01 10:01:00+00', payload => '{"p": 1}', priority => 7,
                    headers => '{"h": "x"}', fire_timeout => '20 seconds');
CREATE TEMP TABLE c1 AS SELECT * FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 10, '2030-01-01 10:01:00+00');
CREATE TEMP TABLE c2 AS SELECT * FROM pgq.claim_schedules('22222222-2222-2222-2222-222222222222', 10, '2030-01-01 10:01:30+00');

SELECT results_eq(
    $$SELECT state, job_id FROM pgq.fire_schedule('11111111-1111-1111-1111-111111111111', 'tick', (SELECT lease FROM c1),
                                                 '2030-01-01 10:02:00+00', at => '2030-01-01 10:01:31+00')$$,
    $$VALUES ('lost'::text, NULL::bigint)$$,
    'the silent claimer lost its lease: fires nothing');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'tick_job'), 0, 'no job from the lost lease');

CREATE TEMP TABLE f2 AS
SELECT * FROM pgq.fire_schedule('22222222-2222-2222-2222-222222222222', 'tick', (SELECT lease FROM c2),
                                '2030-01-01 10:02:00+00', at => '2030-01-01 10:01:31+00');
SELECT is((SELECT state FROM f2), 'fired', 'the lease holder fires');
SELECT results_eq(
    $$SELECT entrypoint, payload, priority, dedupe_key, headers FROM pgq.jobs WHERE id = (SELECT job_id FROM f2)$$,
    $$VALUES ('tick_job'::text, '{"p": 1}'::jsonb, 7, 'pgq:schedule:tick@2030-01-01T10:01:00.000000Z'::text,
              '{"h": "x", "pgq_schedule": "tick", "pgq_due_at": "2030-01-01T10:01:00+00:00"}'::jsonb)$$,
    'an ordinary job with the schedule''s payload, priority and headers, deduplicated by tick');
SELECT results_eq(
    $$SELECT state, lease, next_run_at, last_run_at, last_job_id FROM pgq.schedules WHERE name = 'tick'$$,
    $$SELECT 'idle'::text, NULL::bigint, '2030-01-01 10:02:00+00'::timestamptz, '2030-01-01 10:01:00+00'::timestamptz, job_id FROM f2$$,
    'the schedule is idle again with the next run stored');
SELECT results_eq(
    $$SELECT state FROM pgq.fire_schedule('22222222-2222-2222-2222-222222222222', 'tick', (SELECT lease FROM c2),
                                         '2030-01-01 10:03:00+00', at => '2030-01-01 10:01:32+00')$$,
    ARRAY['lost'], 'firing the same claim twice: lost (the lease was spent)');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'tick_job'), 1, 'still one job for the tick');

-- The same tick fired again through a stale dedupe key (a job still live) yields the same job.
UPDATE pgq.schedules SET next_run_at = '2030-01-01 10:01:00+00' WHERE name = 'tick';
CREATE TEMP TABLE c3 AS SELECT * FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 10, '2030-01-01 10:01:40+00');
SELECT results_eq(
    $$SELECT job_id FROM pgq.fire_schedule('11111111-1111-1111-1111-111111111111', 'tick', (SELECT lease FROM c3),
                                          '2030-01-01 10:02:00+00', at => '2030-01-01 10:01:40+00')$$,
    $$SELECT job_id FROM f2$$,
    'a tick fired twice while its job is live returns the same job');

-- next_run_at must move forward.
CREATE TEMP TABLE c4 AS SELECT * FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 10, '2030-01-01 10:02:00+00');
SELECT throws_ok(
    $$SELECT * FROM pgq.fire_schedule('11111111-1111-1111-1111-111111111111', 'tick', (SELECT lease FROM c4),
                                     '2030-01-01 10:02:00+00', at => '2030-01-01 10:02:00+00')$$,
    'PQ011', NULL, 'next_run_at not after the tick: PQ011');
SELECT is((SELECT state FROM pgq.schedules WHERE name = 'tick'), 'firing', 'the refused fire changed nothing');

-- Catch-up: a tick missed by more than misfire_grace.
SELECT pgq.schedule('once', 'late_job', '0 * * * *', '2030-01-01 06:00:00+00', catch_up => 'once');
SELECT pgq.schedule('skip', 'late_job', '0 * * * *', '2030-01-01 06:00:00+00', catch_up => 'skip');
CREATE TEMP TABLE late AS SELECT * FROM pgq.claim_schedules('33333333-3333-3333-3333-333333333333', 10, '2030-01-01 10:30:00+00');
SELECT results_eq(
    $$SELECT f.state FROM late l, pgq.fire_schedule('33333333-3333-3333-3333-333333333333', l.name, l.lease,
                                                    '2030-01-01 11:00:00+00', at => '2030-01-01 10:30:00+00') f
      WHERE l.name IN ('once', 'skip')
      ORDER BY l.name$$,
    ARRAY['fired', 'skipped'],
    'a missed tick: catch_up once fires it once, skip drops it');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'late_job'), 1, 'one catch-up job for four missed hours');
SELECT is((SELECT count(*)::int FROM pgq.schedules WHERE name IN ('once', 'skip') AND next_run_at = '2030-01-01 11:00:00+00'),
          2, 'both move on to the next run the caller computed');

-- Keeping up vs catching up: within misfire_grace every tick fires in turn; beyond it the
-- missed ticks collapse onto the next tick after now.
SELECT pgq.schedule('sec', 'sec_job', '* * * * * *', '2030-01-02 00:00:00+00', misfire_grace => '10 seconds');
CREATE TEMP TABLE k1 AS SELECT * FROM pgq.claim_schedules('44444444-4444-4444-4444-444444444444', 10, '2030-01-02 00:00:05+00');
SELECT pgq.fire_schedule('44444444-4444-4444-4444-444444444444', 'sec', (SELECT lease FROM k1 WHERE name = 'sec'),
                         '2030-01-02 00:00:01+00', '2030-01-02 00:00:06+00', at => '2030-01-02 00:00:05+00');
SELECT is((SELECT next_run_at FROM pgq.schedules WHERE name = 'sec'), '2030-01-02 00:00:01+00'::timestamptz,
          '5 s behind, within the grace: the next tick after the fired one (none is lost)');
CREATE TEMP TABLE k2 AS SELECT * FROM pgq.claim_schedules('44444444-4444-4444-4444-444444444444', 10, '2030-01-02 00:01:00+00');
SELECT pgq.fire_schedule('44444444-4444-4444-4444-444444444444', 'sec', (SELECT lease FROM k2 WHERE name = 'sec'),
                         '2030-01-02 00:00:02+00', '2030-01-02 00:01:01+00', at => '2030-01-02 00:01:00+00');
SELECT is((SELECT next_run_at FROM pgq.schedules WHERE name = 'sec'), '2030-01-02 00:01:01+00'::timestamptz,
          '59 s behind, beyond the grace: the missed ticks collapse onto the next tick after now');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'sec_job'), 2, 'one job per fire');

SELECT throws_ok($$SELECT * FROM pgq.fire_schedule(NULL, 'x', 1, now())$$, 'PQ009', NULL, 'NULL argument: PQ009');

-- The same worker re-claims its own schedule after fire_timeout passed, then its first call
-- arrives late with the old lease: that call fires nothing, the current lease is not lost.
SELECT pgq.schedule('same', 'same_job', '* * * * *', '2030-02-01 10:00:00+00', fire_timeout => '10 seconds');
CREATE TEMP TABLE s1 AS SELECT * FROM pgq.claim_schedules('33333333-3333-3333-3333-333333333333', 10, '2030-02-01 10:00:00+00')
                        WHERE name = 'same';
CREATE TEMP TABLE s2 AS SELECT * FROM pgq.claim_schedules('33333333-3333-3333-3333-333333333333', 10, '2030-02-01 10:00:11+00')
                        WHERE name = 'same';
SELECT ok((SELECT s1.lease <> s2.lease FROM s1, s2), 'setup: the re-claim gave the same worker a new lease');
SELECT results_eq(
    $$SELECT state, job_id FROM pgq.fire_schedule('33333333-3333-3333-3333-333333333333', 'same', (SELECT lease FROM s1),
                                                 '2030-02-01 10:01:00+00', at => '2030-02-01 10:00:12+00')$$,
    $$VALUES ('lost'::text, NULL::bigint)$$,
    'the old lease of the same worker: lost, nothing fired');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'same_job'), 0, 'no job from the old lease');
SELECT is((SELECT state FROM pgq.fire_schedule('33333333-3333-3333-3333-333333333333', 'same', (SELECT lease FROM s2),
                                                '2030-02-01 10:01:00+00', at => '2030-02-01 10:00:13+00')),
          'fired', 'the current lease still fires (it was not lost)');

SELECT * FROM finish();
ROLLBACK;
