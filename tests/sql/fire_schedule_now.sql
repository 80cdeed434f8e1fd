-- pgq.fire_schedule_now: a job now, as a tick would enqueue it, without moving the next run.
BEGIN;
SELECT plan(8);

SELECT pgq.schedule('fn', 'fn.ep', '0 3 * * *', '2030-01-02 03:00:00+00', payload => '{"r": 1}', priority => 4,
                    headers => '{"h": "x"}');
SELECT pgq.fire_schedule_now('fn', '2030-01-01 12:00:00+00') AS job \gset

SELECT is((SELECT (entrypoint, payload, priority) FROM pgq.jobs WHERE id = :job),
          ('fn.ep'::text, '{"r": 1}'::jsonb, 4), 'a job of the schedule''s entrypoint, payload and priority');
SELECT is((SELECT headers FROM pgq.jobs WHERE id = :job),
          '{"h": "x", "pgq_schedule": "fn", "pgq_due_at": "2030-01-01T12:00:00+00:00"}'::jsonb,
          'its headers name the schedule and the time');
SELECT is((SELECT (schedule, schedule_due_at) FROM pgq.job(:job)),
          ('fn'::text, '2030-01-01 12:00:00+00'::timestamptz), 'pgq.job shows the schedule that fired it');
SELECT is((SELECT (next_run_at, last_job_id, state) FROM pgq.schedules WHERE name = 'fn'),
          ('2030-01-02 03:00:00+00'::timestamptz, :job::bigint, 'idle'::text),
          'the next run is kept; the job is the schedule''s last job');
SELECT is(pgq.fire_schedule_now('fn', '2030-01-01 12:00:00+00'), :job::bigint, 'the same time again: the same job');
SELECT throws_ok($$SELECT pgq.fire_schedule_now('nope')$$, 'PQ011', 'no schedule ''nope''', 'unknown schedule: PQ011');
SELECT throws_ok($$SELECT pgq.fire_schedule_now(NULL)$$, 'PQ009', NULL, 'NULL name: PQ009');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_reader; PERFORM pgq.fire_schedule_now('fn'); END $do$ $q$,
                 '42501', 'permission denied for function fire_schedule_now', 'pgq_reader may not fire');

SELECT * FROM finish();
ROLLBACK;
