-- pgq.unschedule and pgq.next_schedule_at.
BEGIN;
SELECT plan(6);

SELECT is(pgq.next_schedule_at(), NULL, 'no schedules: NULL (a scheduler need not wake)');
SELECT pgq.schedule('a', 'e', '* * * * *', '2030-01-01 10:01:00+00');
SELECT pgq.schedule('b', 'e', '* * * * *', '2030-01-01 10:00:30+00');
SELECT is(pgq.next_schedule_at(), '2030-01-01 10:00:30+00'::timestamptz, 'the earliest next_run_at');
SELECT is(pgq.unschedule('b'), true, 'removing an existing schedule: true');
SELECT is(pgq.unschedule('b'), false, 'removing it again: false');
SELECT is(pgq.next_schedule_at(), '2030-01-01 10:01:00+00'::timestamptz, 'the remaining schedule decides');
SELECT is((SELECT array_agg(name) FROM pgq.schedules), ARRAY['a'], 'only the other schedule is left');

SELECT * FROM finish();
ROLLBACK;
