-- pgq.pause: paused entrypoints claim nothing (queued or stale), keep their policy and accept
-- enqueues; the pause shows in the policy row, pgq.queue_stats and pgq.metrics.
BEGIN;
SELECT plan(22);

SELECT pgq.configure('pa.limited', concurrency_limit => 3, max_attempts => 7);
SELECT pgq.enqueue_many(ARRAY['pa.limited', 'pa.limited', 'pa.free', 'pa.free', 'pa.other'],
                        run_ats => array_fill(now() - interval '1 hour', ARRAY[5]));
-- a running job of pa.free that will be stale later
SELECT id AS stale_id, lease AS stale_lease FROM pgq.claim('99999999-9999-9999-9999-999999999999', '{pa.free}', 1,
                                                           now() - interval '10 minutes') \gset

SELECT session_user AS me \gset
CREATE TEMP TABLE p AS SELECT * FROM pgq.pause('{pa.limited,pa.free,pa.new}', now() - interval '1 minute');
SELECT results_eq($$SELECT entrypoint, paused_at, paused_by FROM p$$,
                  format($$VALUES ('pa.free'::text, now() - interval '1 minute', %L),
                           ('pa.limited', now() - interval '1 minute', %L),
                           ('pa.new', now() - interval '1 minute', %L)$$, :'me', :'me', :'me'),
                  'returns the policy rows, by entrypoint, with paused_at = at and paused_by = the session user');
SELECT row_eq($$SELECT concurrency_limit, max_attempts FROM p WHERE entrypoint = 'pa.limited'$$, ROW(3, 7),
              'the policy is not touched');
SELECT row_eq($$SELECT concurrency_limit, max_attempts, backoff_base FROM pgq.entrypoints WHERE entrypoint = 'pa.new'$$,
              ROW(NULL::int, 5, interval '1 second'), 'an entrypoint never seen gets its default policy row, paused');

-- Claims skip paused entrypoints ---------------------------------------------------------------
SELECT results_eq($$SELECT entrypoint FROM pgq.claim('11111111-1111-1111-1111-111111111111',
                                                     '{pa.limited,pa.free,pa.other}', 10, now())$$,
                  ARRAY['pa.other'], 'one claim over three entrypoints takes only the unpaused one');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{pa.free}', 10,
                                               now() + interval '1 hour')), 0,
          'a stale job of a paused entrypoint is not re-claimed');
SELECT row_eq(format('SELECT status, worker_id, lease FROM pgq.jobs WHERE id = %s', :stale_id),
              ROW('running'::text, '99999999-9999-9999-9999-999999999999'::uuid, :stale_lease::bigint),
              'it stays running under its old lease');
SELECT is((SELECT stale FROM pgq.queue_stats WHERE entrypoint = 'pa.free'), 1::bigint, 'and shows as stale');
SELECT ok(pgq.enqueue('pa.limited') IS NOT NULL, 'enqueueing for a paused entrypoint is accepted');
SELECT is((SELECT queued FROM pgq.queue_stats WHERE entrypoint = 'pa.limited'), 3::bigint, 'and the job waits');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{pa.limited}', 10, now())), 0,
          'a paused limited entrypoint claims nothing');

-- Running jobs finish normally ------------------------------------------------------------------
SELECT is((SELECT count(*)::int FROM pgq.complete('99999999-9999-9999-9999-999999999999', ARRAY[:stale_id]::bigint[],
                                                  ARRAY[:stale_lease]::bigint[], '{successful}')), 1,
          'a job that was running when paused can still complete');

-- Visible everywhere -----------------------------------------------------------------------------
SELECT results_eq($$SELECT entrypoint, paused FROM pgq.queue_stats WHERE entrypoint LIKE 'pa.%' ORDER BY entrypoint$$,
                  $$VALUES ('pa.free'::text, true), ('pa.limited', true), ('pa.new', true), ('pa.other', false)$$,
                  'pgq.queue_stats: paused');
SELECT results_eq($$SELECT entrypoint, paused FROM pgq.metrics('{pa.free,pa.other}')$$,
                  $$VALUES ('pa.free'::text, true), ('pa.other', false)$$, 'pgq.metrics: paused');
SELECT ok((SELECT paused_at IS NOT NULL FROM pgq.configure('pa.free', max_attempts => 2)),
          'the configure answer carries paused_at');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{pa.free}', 10, now())), 0,
          'configure does not resume');

-- Pausing again keeps the first pause ----------------------------------------------------------
SELECT is((SELECT paused_at FROM pgq.pause('{pa.free}')), now() - interval '1 minute', 'pausing again keeps paused_at');

-- concurrency_limit 0 still pauses too, independently ------------------------------------------
SELECT pgq.configure('pa.zero', concurrency_limit => 0);
SELECT pgq.enqueue('pa.zero');
SELECT is((SELECT paused FROM pgq.queue_stats WHERE entrypoint = 'pa.zero'), false,
          'concurrency_limit 0 is not a pause (paused is false)');

-- Errors: nothing paused -------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM pgq.pause(NULL)$$, 'PQ001', 'entrypoints must be a non-empty array, got NULL', 'NULL: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.pause('{}')$$, 'PQ001', 'entrypoints must be a non-empty array, got {}', 'empty: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.pause(ARRAY['pa.other', NULL])$$, 'PQ001',
                 'invalid entrypoint NULL: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL', 'a NULL name: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.pause(ARRAY['pa.other', repeat('x', 201)])$$, 'PQ001', NULL, 'a name too long: PQ001');
SELECT is((SELECT paused FROM pgq.queue_stats WHERE entrypoint = 'pa.other'), false, 'failed calls paused nothing');

SELECT * FROM finish();
ROLLBACK;
