-- Hostile input: SQL refuses what it could not handle later (times, intervals, JSON size, nesting
-- and numbers, dedupe keys, multi-dimensional arrays, cron strings, new entrypoints per call),
-- with a PQ code naming the value, and a refused call changes nothing.
BEGIN;
SELECT plan(72);

-- (That a refused call changes nothing is checked for every function by tests/py/test_fuzz_sql.py.)

-- Times -------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.enqueue('hi.t', run_at => '-infinity')$$, 'PQ009',
    'run_at at position 1 ''-infinity'' is out of range: times must be finite, from 1970-01-01 to 9000-01-01 UTC',
    'run_at -infinity: PQ009 naming the value');
SELECT throws_ok($$SELECT pgq.enqueue('hi.t', run_at => 'infinity')$$, 'PQ009', NULL, 'run_at infinity: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue('hi.t', run_at => '0044-03-15 BC')$$, 'PQ009', NULL, 'run_at 44 BC: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue('hi.t', run_at => '9000-01-01 00:00:00+00')$$, 'PQ009', NULL, 'run_at 9000-01-01: PQ009 (exclusive bound)');
SELECT throws_ok($$SELECT pgq.enqueue_many('{hi.t,hi.t}', run_ats => ARRAY[now(), 'infinity'])$$, 'PQ009',
    'run_at at position 2 ''infinity'' is out of range: times must be finite, from 1970-01-01 to 9000-01-01 UTC',
    'enqueue_many: the bad run_at and its position');
SELECT lives_ok($$SELECT pgq.enqueue('hi.t', run_at => '8999-12-31 23:59:59+00')$$, 'run_at 8999-12-31: accepted');
SELECT lives_ok($$SELECT pgq.enqueue('hi.t', run_at => '1970-01-01 00:00:00+00')$$, 'run_at 1970-01-01: accepted');
SELECT throws_ok($$SELECT * FROM pgq.cancel(ARRAY[pgq.enqueue('hi.c')], at => 'infinity')$$, 'PQ009',
    'at ''infinity'' is out of range: times must be finite, from 1970-01-01 to 9000-01-01 UTC',
    'cancel at infinity: PQ009 (it used to leave a history row that broke history_summary)');
SELECT lives_ok($$SELECT * FROM pgq.history_summary()$$, 'history_summary works');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{hi.t}', 1, '-infinity')$$, 'PQ009', NULL, 'claim at -infinity: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.heartbeat('11111111-1111-1111-1111-111111111111', '{}', '{}', 'infinity')$$, 'PQ009', NULL, 'heartbeat at infinity: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.complete('11111111-1111-1111-1111-111111111111', '{}', '{}', '{}', NULL, 'infinity')$$, 'PQ009', NULL, 'complete at infinity: PQ009');
-- release of a job whose cancel was requested used to write finished_at = infinity to history.
SELECT pgq.enqueue('hi.rl') AS hi_rl \gset
SELECT lease AS hi_rl_lease FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{hi.rl}') \gset
SELECT pgq.cancel(ARRAY[:hi_rl]::bigint[]);
SELECT throws_ok(format($$SELECT * FROM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], 'infinity')$$,
                        :hi_rl, :hi_rl_lease), 'PQ009',
    'at ''infinity'' is out of range: times must be finite, from 1970-01-01 to 9000-01-01 UTC',
    'release at infinity: PQ009 naming the value');
SELECT throws_ok(format($$SELECT * FROM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], '1960-01-01')$$,
                        :hi_rl, :hi_rl_lease), 'PQ009', NULL, 'release at 1960: PQ009');
SELECT row_eq(format('SELECT status, cancel_requested FROM pgq.jobs WHERE id = %s', :hi_rl),
              ROW('running'::text, true), 'and the job is still running, flagged');
SELECT lives_ok($$SELECT * FROM pgq.history_summary()$$, 'history_summary still answers');
SELECT throws_ok($$SELECT * FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111', 1, '294000-01-01')$$, 'PQ009', NULL, 'claim_schedules far future: PQ009');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '* * * * *', 'infinity')$$, 'PQ009', NULL, 'schedule next_run_at infinity: PQ009');

-- Intervals ---------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.configure('hi.t', heartbeat_timeout => '1000000 years')$$, 'PQ008',
    'heartbeat_timeout must be between 00:00:01 and 7 days, got 1000000 years', 'heartbeat_timeout of a million years: PQ008');
SELECT throws_ok($$SELECT pgq.configure('hi.t', backoff_base => '2 days')$$, 'PQ008', NULL, 'backoff_base over 1 day: PQ008');
SELECT throws_ok($$SELECT pgq.configure('hi.t', backoff_max => '1000000 years')$$, 'PQ008', NULL, 'backoff_max of a million years: PQ008');
SELECT lives_ok($$SELECT pgq.configure('hi.t', backoff_base => '1 day', backoff_max => '365 days', heartbeat_timeout => '7 days')$$, 'the upper bounds themselves are accepted');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '* * * * *', now(), fire_timeout => '100000000 years')$$, 'PQ008',
    'fire_timeout must be between 00:00:01 and 1 day, got 100000000 years', 'fire_timeout of 1e8 years: PQ008');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '* * * * *', now(), misfire_grace => '400 days')$$, 'PQ008', NULL, 'misfire_grace over 365 days: PQ008');
SELECT throws_ok($$SELECT pgq.prune_history('100000 years')$$, 'PQ008',
    'older_than must be between 00:00:00 and 36500 days, got 100000 years', 'prune_history 100000 years: PQ008');

-- JSON: size as text, nesting, numbers -----------------------------------------------------------
CREATE TEMP TABLE big AS SELECT jsonb_build_object('s', repeat('a', 2000000)) AS p;
SELECT ok((SELECT pg_column_size(p) < 1048576 FROM big), 'setup: a 2 MB payload stored compressed is small');
SELECT throws_ok($$SELECT pgq.enqueue('hi.j', (SELECT p FROM big))$$, 'PQ006',
    'payload at position 1 is 2000009 bytes, over the 1048576-byte limit', 'payload measured uncompressed: PQ006');
SELECT throws_ok($$SELECT pgq.enqueue('hi.j', headers => jsonb_build_object('h', repeat('b', 70000)))$$, 'PQ006',
    'headers at position 1 is 70009 bytes, over the 65536-byte limit', 'headers over 64 KiB: PQ006');
SELECT throws_ok($$SELECT pgq.enqueue_many('{hi.j,hi.j}', headers => jsonb_build_array('{}'::jsonb, (SELECT p FROM big)))$$, 'PQ006', NULL, 'enqueue_many headers: PQ006');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.j', '* * * * *', now(), payload => (SELECT p FROM big))$$, 'PQ006', NULL, 'schedule payload: the job limit');
SELECT throws_ok($$SELECT pgq.enqueue('hi.j', (repeat('[', 3000) || repeat(']', 3000))::jsonb)$$, 'PQ009',
    'payload at position 1 is nested deeper than 64 levels', '3000 nested arrays: PQ009');
SELECT lives_ok($$SELECT pgq.enqueue('hi.j', (repeat('[', 65) || repeat(']', 65))::jsonb)$$, '65 nested arrays (deepest at level 64): accepted');
SELECT throws_ok($$SELECT pgq.enqueue('hi.j', (repeat('[', 66) || repeat(']', 66))::jsonb)$$, 'PQ009', NULL, '66 nested arrays: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue('hi.j', ('{"n": ' || repeat('9', 5000) || '}')::jsonb)$$, 'PQ009', NULL, 'a 5000-digit number: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue('hi.j', '[1e-400]')$$, 'PQ009',
    'payload at position 1 holds the number 0.00000000000000000000000000000000000000..., outside what a double holds (0 or 1e-307 to 1e308 in magnitude)',
    '1e-400: PQ009 naming the number');
SELECT lives_ok($$SELECT pgq.enqueue('hi.j', '{"a": [1e308, -1e-307, 0, 1.5]}')$$, 'numbers a double holds: accepted');
SELECT throws_ok($$SELECT pgq.enqueue('hi.j', headers => ('{"x": ' || repeat('[', 70) || repeat(']', 70) || '}')::jsonb)$$, 'PQ009', NULL, 'deep headers: PQ009');

-- Dedupe keys ------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.enqueue('hi.d', dedupe_key => repeat('k', 3000))$$, 'PQ009', NULL, 'a 3000-byte dedupe key: PQ009, not 54000');
SELECT lives_ok($$SELECT pgq.enqueue('hi.d', dedupe_key => repeat('k', 1000))$$, 'a 1000-byte dedupe key: accepted');
SELECT throws_ok($$SELECT pgq.enqueue('hi.d', dedupe_key => 'pgq:schedule:nightly@2030-01-01T00:00:00.000000Z')$$, 'PQ009',
    'dedupe key ''pgq:schedule:nightly@2030-01-01T00:00:00.000000Z'' at position 1 uses the prefix ''pgq:schedule:'', reserved for schedule fires',
    'the schedule prefix is reserved: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue_many('{hi.d,hi.d}', dedupe_keys => '{a,pgq:schedule:x}')$$, 'PQ009', NULL, 'enqueue_many: reserved too');

-- Multi-dimensional arrays ------------------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY[['hi.m'],['hi.m']], '[{"x": 1}, {"x": 2}]')$$, 'PQ009',
    'entrypoints must be a one-dimensional array, got 2 dimensions [1:2][1:1]', 'enqueue_many no longer flattens 2-D arrays');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY[['hi.m'],['hi.m']])$$, 'PQ009', NULL, 'enqueue_many: 2-D entrypoints');
SELECT throws_ok($$SELECT * FROM pgq.cancel(ARRAY[[1],[2]]::bigint[])$$, 'PQ009', NULL, 'cancel: 2-D ids (was 0A000)');
SELECT throws_ok($$SELECT * FROM pgq.requeue(ARRAY[[1],[2]]::bigint[])$$, 'PQ009', NULL, 'requeue: 2-D ids');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', ARRAY[['a'],['b']])$$, 'PQ009', NULL, 'claim: 2-D entrypoints');
SELECT throws_ok($$SELECT * FROM pgq.heartbeat('11111111-1111-1111-1111-111111111111', ARRAY[[1],[2]]::bigint[], ARRAY[[1],[2]]::bigint[])$$, 'PQ009', NULL, 'heartbeat: 2-D ids');
SELECT throws_ok($$SELECT * FROM pgq.complete('11111111-1111-1111-1111-111111111111', '{1}', '{1}', ARRAY[['failed']])$$, 'PQ009', NULL, 'complete: 2-D statuses');
SELECT throws_ok($$SELECT * FROM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[[1]]::bigint[], ARRAY[[1]]::bigint[])$$, 'PQ009', NULL, 'release: 2-D ids');
SELECT throws_ok($$SELECT * FROM pgq.history_summary(ARRAY[['a'],['b']])$$, 'PQ009', NULL, 'history_summary: 2-D entrypoints (also without history)');
SELECT throws_ok($$SELECT * FROM pgq.entrypoint_config(ARRAY[['a'],['b']])$$, 'PQ009', NULL, 'entrypoint_config: 2-D entrypoints');
SELECT throws_ok($$SELECT * FROM pgq.delete_jobs(ARRAY[[1],[2]]::bigint[])$$, 'PQ009', NULL, 'delete_jobs: 2-D ids (was 0A000)');

-- Details of complete -----------------------------------------------------------------------------
SELECT pgq.enqueue('hi.r') AS rid \gset
SELECT lease AS rlease FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{hi.r}', 1) \gset
SELECT throws_ok(format($$SELECT * FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], '{failed}', jsonb_build_array('{"retry_after": 1e-400}'::jsonb))$$, :rid, :rlease),
    'PQ009', NULL, 'retry_after 1e-400: PQ009 (was 22003)');
SELECT is((SELECT status FROM pgq.jobs WHERE id = :rid), 'running', 'the job is still running under its lease');

-- Cron --------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '99 99 99 99 99', now())$$, 'PQ011',
    'invalid cron expression ''99 99 99 99 99'': minute field ''99'' is outside 0..59', '99 99 99 99 99: PQ011 naming the field');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '*/0 * * * *', now())$$, 'PQ011', NULL, 'a step of 0: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '0 0 30 2 *', now())$$, 'PQ011',
    'invalid cron expression ''0 0 30 2 *'': no month of the month field has day 30', 'February 30th: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '0 24 * * *', now())$$, 'PQ011', NULL, 'hour 24: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '0 0 * * 8', now())$$, 'PQ011', NULL, 'weekday 8: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '0 0 * mon *', now())$$, 'PQ011', NULL, 'a weekday name in the month field: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('hi.s', 'hi.t', '5-1 * * * *', now())$$, 'PQ011', NULL, 'a range that ends before it starts: PQ011');
SELECT lives_ok($$SELECT pgq.schedule('hi.s1', 'hi.t', '*/15 0-6,22 1-5/2,20 jan-MAR,dec *', now())$$, 'lists, ranges, steps, names: accepted');
SELECT lives_ok($$SELECT pgq.schedule('hi.s2', 'hi.t', ' 30  */5 * * * mon#2 ', now())$$, 'six fields with seconds and d#n: accepted');
SELECT is((SELECT cron FROM pgq.schedules WHERE name = 'hi.s2'), '30 */5 * * * mon#2', 'stored with single spaces');
SELECT lives_ok($$SELECT pgq.schedule('hi.s3', 'hi.t', '0 0 29 2 *', now())$$, 'February 29th: accepted');

-- New entrypoints per statement -------------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY(SELECT 'hi.n' || g FROM generate_series(1, 101) g))$$, 'PQ001',
    'one statement may register at most 100 new entrypoints, this one registers 101', '101 new entrypoints in one call: PQ001');
SELECT is((SELECT count(*)::int FROM pgq.entrypoints WHERE entrypoint LIKE 'hi.n%'), 0, 'none was registered');
SELECT lives_ok($$SELECT pgq.enqueue_many(ARRAY(SELECT 'hi.n' || g FROM generate_series(1, 100) g))$$, '100 new entrypoints: accepted');
SELECT lives_ok($$SELECT pgq.enqueue_many(ARRAY(SELECT 'hi.n' || g FROM generate_series(1, 150) g))$$, '100 known and 50 new: accepted');

-- New priority lanes per statement ---------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.enqueue_many(array_fill('hi.lanes'::text, ARRAY[101]), priorities => ARRAY(SELECT g FROM generate_series(1, 101) g))$$,
    'PQ005', 'one statement may open at most 100 new priority lanes, this one opens 101', '101 new lanes in one call: PQ005');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'hi.lanes'), 0, 'no job was added');
SELECT lives_ok($$SELECT pgq.enqueue_many(array_fill('hi.lanes'::text, ARRAY[100]), priorities => ARRAY(SELECT g FROM generate_series(1, 100) g))$$,
    '100 new lanes: accepted');

SELECT * FROM finish();
ROLLBACK;
