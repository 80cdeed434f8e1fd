-- pgq.configure: per-entrypoint policy; NULL leaves a setting unchanged; reset; PQ008 / PQ001.
BEGIN;
SELECT plan(26);

-- A new entrypoint: row created with defaults plus the given settings, returned.
SELECT row_eq($$SELECT (c).entrypoint, (c).concurrency_limit, (c).max_attempts, (c).backoff_base, (c).backoff_max,
                       (c).heartbeat_timeout
                  FROM (SELECT pgq.configure('cf', concurrency_limit => 3) AS c) x$$,
              ROW('cf'::text, 3, 5, interval '1 second', interval '5 minutes', interval '30 seconds'),
              'returns the row: given setting applied, defaults elsewhere');
SELECT row_eq($$SELECT concurrency_limit, max_attempts, backoff_base, backoff_max, heartbeat_timeout
                  FROM pgq.entrypoints WHERE entrypoint = 'cf'$$,
              ROW(3, 5, interval '1 second', interval '5 minutes', interval '30 seconds'), 'and stores it');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'cf'), 0, 'configuring enqueues nothing');

-- NULL leaves a setting unchanged.
SELECT pgq.configure('cf', max_attempts => 8, backoff_base => interval '2 seconds', backoff_max => interval '1 hour',
                     heartbeat_timeout => interval '2 minutes');
SELECT row_eq($$SELECT concurrency_limit, max_attempts, backoff_base, backoff_max, heartbeat_timeout
                  FROM pgq.entrypoints WHERE entrypoint = 'cf'$$,
              ROW(3, 8, interval '2 seconds', interval '1 hour', interval '2 minutes'),
              'settings not given (concurrency_limit) are kept');
SELECT row_eq($$SELECT (c).concurrency_limit, (c).max_attempts, (c).backoff_base, (c).backoff_max, (c).heartbeat_timeout
                  FROM (SELECT pgq.configure('cf') AS c) x$$,
              ROW(3, 8, interval '2 seconds', interval '1 hour', interval '2 minutes'),
              'all NULL: nothing changes, the row is returned');
SELECT pgq.configure('cf', concurrency_limit => 0);
SELECT is((SELECT concurrency_limit FROM pgq.entrypoints WHERE entrypoint = 'cf'), 0, 'concurrency_limit 0 is allowed (pause)');
SELECT pgq.configure('cf', backoff_base => interval '0');
SELECT is((SELECT backoff_base FROM pgq.entrypoints WHERE entrypoint = 'cf'), interval '0', 'backoff_base 0 is allowed');

-- reset => true restores the defaults, then applies given settings.
SELECT row_eq($$SELECT (c).concurrency_limit, (c).max_attempts, (c).backoff_base, (c).backoff_max, (c).heartbeat_timeout
                  FROM (SELECT pgq.configure('cf', reset => true) AS c) x$$,
              ROW(NULL::int, 5, interval '1 second', interval '5 minutes', interval '30 seconds'),
              'reset => true: every setting back to its default (no limit)');
SELECT pgq.configure('cf', concurrency_limit => 4, max_attempts => 2);
SELECT row_eq($$SELECT (c).concurrency_limit, (c).max_attempts FROM (SELECT pgq.configure('cf', max_attempts => 9, reset => true) AS c) x$$,
              ROW(NULL::int, 9), 'reset with a setting: defaults first, then the setting');

-- An entrypoint already registered by enqueue keeps its row and gets the change.
SELECT pgq.enqueue('cf_enq');
SELECT pgq.configure('cf_enq', heartbeat_timeout => interval '10 seconds');
SELECT is((SELECT heartbeat_timeout FROM pgq.entrypoints WHERE entrypoint = 'cf_enq'), interval '10 seconds',
          'configure updates a row that enqueue created');

-- Errors: PQ008 naming the value; nothing changes.
CREATE TEMP TABLE before_cf AS SELECT * FROM pgq.entrypoints WHERE entrypoint = 'cf';
SELECT throws_ok($$SELECT pgq.configure('cf', concurrency_limit => -1)$$, 'PQ008',
    'concurrency_limit must be >= 0 (0 pauses), got -1', 'negative concurrency_limit: PQ008');
SELECT throws_ok($$SELECT pgq.configure('cf', max_attempts => 0)$$, 'PQ008',
    'max_attempts must be >= 1, got 0', 'max_attempts 0: PQ008');
SELECT throws_ok($$SELECT pgq.configure('cf', backoff_base => interval '-1 second')$$, 'PQ008',
    'backoff_base must be between 00:00:00 and 1 day, got -00:00:01', 'negative backoff_base: PQ008');
SELECT throws_ok($$SELECT pgq.configure('cf', heartbeat_timeout => interval '999 milliseconds')$$, 'PQ008',
    'heartbeat_timeout must be between 00:00:01 and 7 days, got 00:00:00.999', 'heartbeat_timeout under 1 s: PQ008');
SELECT throws_ok($$SELECT pgq.configure('cf', backoff_max => interval '0.5 seconds')$$, 'PQ008',
    'backoff_max 00:00:00.5 must not be below backoff_base 00:00:01', 'backoff_max below the stored backoff_base: PQ008');
SELECT throws_ok($$SELECT pgq.configure('cf', backoff_base => interval '10 minutes')$$, 'PQ008',
    'backoff_max 00:05:00 must not be below backoff_base 00:10:00', 'backoff_base above the stored backoff_max: PQ008');
SELECT throws_ok($$SELECT pgq.configure('cf', backoff_base => interval '2 minutes', backoff_max => interval '1 minute')$$, 'PQ008',
    NULL, 'backoff_max below backoff_base in one call: PQ008');
SELECT throws_ok($$SELECT pgq.configure('cf', max_attempts => 0, reset => true)$$, 'PQ008', NULL,
    'a bad value with reset: PQ008');
SELECT set_eq($$SELECT * FROM pgq.entrypoints WHERE entrypoint = 'cf'$$, $$SELECT * FROM before_cf$$,
              'failed calls changed nothing (not even reset)');
SELECT lives_ok($$SELECT pgq.configure('cf', backoff_base => interval '10 minutes', backoff_max => interval '10 minutes')$$,
                'backoff_max equal to backoff_base is allowed');

SELECT count(*)::int AS n0 FROM pgq.entrypoints \gset
SELECT throws_ok($$SELECT pgq.configure(NULL)$$, 'PQ001',
    'invalid entrypoint NULL: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL', 'NULL entrypoint: PQ001');
SELECT throws_ok($$SELECT pgq.configure('')$$, 'PQ001', NULL, 'empty entrypoint: PQ001');
SELECT throws_ok(format('SELECT pgq.configure(%L)', repeat('e', 201)), 'PQ001', NULL, '201-byte entrypoint: PQ001');
SELECT throws_ok($$SELECT pgq.configure(E'a\tb')$$, 'PQ001', NULL, 'control character: PQ001');
SELECT is((SELECT count(*)::int FROM pgq.entrypoints), :n0, 'no policy row was created by a failed call');

-- The policy is what claim and complete use (max_attempts shown in claimed_job).
SELECT pgq.configure('cf_use', max_attempts => 3, heartbeat_timeout => interval '90 seconds');
SELECT pgq.enqueue('cf_use');
SELECT row_eq($$SELECT max_attempts, heartbeat_timeout FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cf_use}')$$,
              ROW(3, interval '90 seconds'), 'claim hands out the configured policy');

SELECT * FROM finish();
ROLLBACK;
