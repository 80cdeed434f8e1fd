-- pgq.schedule: idempotent registration keyed by name; next_run_at kept unless cron or time zone
-- change; validation of name, entrypoint, cron shape, time zone, catch_up, intervals.
BEGIN;
SELECT plan(16);

SELECT is((SELECT next_run_at FROM pgq.schedule('s1', 'report', '*/5 * * * *', '2030-01-01 10:05:00+00', 'Europe/Berlin')),
          '2030-01-01 10:05:00+00'::timestamptz, 'a new schedule stores the given next_run_at');
SELECT is((SELECT next_run_at FROM pgq.schedule('s1', 'report', '*/5 * * * *', '2030-01-01 10:10:00+00', 'Europe/Berlin',
                                                '{"k": 1}', 3)),
          '2030-01-01 10:05:00+00'::timestamptz, 're-registering the same cron keeps next_run_at');
SELECT results_eq($$SELECT payload, priority, catch_up, fire_timeout FROM pgq.schedules WHERE name = 's1'$$,
                  $$VALUES ('{"k": 1}'::jsonb, 3, 'once'::text, interval '30 seconds')$$,
                  'other settings are updated; defaults for catch_up and fire_timeout');
SELECT is((SELECT next_run_at FROM pgq.schedule('s1', 'report', '0 * * * *', '2030-01-01 11:00:00+00', 'Europe/Berlin')),
          '2030-01-01 11:00:00+00'::timestamptz, 'a changed cron expression takes the new next_run_at');
SELECT is((SELECT next_run_at FROM pgq.schedule('s1', 'report', '0 * * * *', '2030-01-01 12:00:00+00', 'UTC')),
          '2030-01-01 12:00:00+00'::timestamptz, 'a changed time zone takes the new next_run_at');
SELECT is((SELECT count(*)::int FROM pgq.schedules), 1, 'one row per name');
SELECT lives_ok($$SELECT pgq.schedule('s6', 'report', '*/1 * * * * *', now())$$, 'six fields (seconds) are accepted');

SELECT throws_ok($$SELECT pgq.schedule('bad', 'report', 'every minute', now())$$, 'PQ011',
                 'invalid cron expression ''every minute'': expected 5 or 6 fields', 'bad cron shape: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('bad', 'report', '* * * *', now())$$, 'PQ011', NULL, 'four fields: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('bad', 'report', '* * * * *', now(), 'Mars/Olympus')$$, 'PQ011',
                 'unknown time zone ''Mars/Olympus''', 'unknown time zone: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('bad', 'report', '* * * * *', now(), catch_up => 'all')$$, 'PQ011', NULL,
                 'unknown catch_up: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('', 'report', '* * * * *', now())$$, 'PQ011', NULL, 'empty name: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('bad', '', '* * * * *', now())$$, 'PQ001', NULL, 'empty entrypoint: PQ001');
SELECT throws_ok($$SELECT pgq.schedule('bad', 'report', '* * * * *', NULL)$$, 'PQ009', NULL, 'NULL next_run_at: PQ009');
SELECT throws_ok($$SELECT pgq.schedule('bad', 'report', '* * * * *', now(), fire_timeout => '0 seconds')$$, 'PQ008',
                 NULL, 'fire_timeout under 1 s: PQ008');
SELECT is((SELECT count(*)::int FROM pgq.schedules WHERE name = 'bad'), 0, 'refused registrations stored nothing');

SELECT * FROM finish();
ROLLBACK;
