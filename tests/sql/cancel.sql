-- pgq.cancel: queued jobs to history as canceled, running jobs flagged; unknown ids ignored.
BEGIN;
SELECT plan(17);

SELECT pgq.enqueue('cx', '{"q": 1}', dedupe_key => 'cx-q') AS q \gset
SELECT pgq.enqueue('cx', '{"r": 1}', priority => 1) AS r \gset
SELECT pgq.enqueue('cx_keep') AS keep \gset
SELECT lease AS rl FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cx}', 1, now()) \gset
SELECT is((SELECT status FROM pgq.jobs WHERE id = :r), 'running', 'setup: one job running');

SELECT set_eq(format('SELECT * FROM pgq.cancel(ARRAY[%s, %s, -7]::bigint[], now() + interval ''1 minute'')', :q, :r),
              format('VALUES (%s::bigint), (%s)', :q, :r), 'returns the queued and the running id, not the unknown one');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :q), 'the queued job left pgq.jobs');
SELECT row_eq(format('SELECT status, finished_at, payload, attempt, worker_id FROM pgq.job_history WHERE id = %s', :q),
              ROW('canceled'::text, now() + interval '1 minute', '{"q": 1}'::jsonb, 0, NULL::uuid),
              'it is in history as canceled, finished at `at`, never run');
SELECT row_eq(format('SELECT status, cancel_requested, lease FROM pgq.jobs WHERE id = %s', :r),
              ROW('running'::text, true, :rl::bigint), 'the running job is flagged, still running under its lease');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.job_history WHERE id = :r), 'and not in history yet');
SELECT is((SELECT status FROM pgq.jobs WHERE id = :keep), 'queued', 'a job not named is untouched');
SELECT is(pgq.enqueue('cx', dedupe_key => 'cx-q') = :q, false, 'the canceled job''s dedupe key is free again');

-- The worker learns it through heartbeat and completes as canceled.
SELECT results_eq(format($$SELECT state FROM pgq.heartbeat('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[])$$, :r, :rl),
                  ARRAY['cancel_requested'], 'heartbeat answers cancel_requested');

-- Cancel again: harmless.
SELECT set_eq(format('SELECT * FROM pgq.cancel(ARRAY[%s, %s]::bigint[])', :q, :r),
              format('VALUES (%s::bigint)', :r), 'cancel again: the finished job is ignored, the running one returned again');
SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE id = :q), 1, 'still one history row');

SELECT is((SELECT count(*)::int FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:r]::bigint[], ARRAY[:rl]::bigint[], '{canceled}')), 1,
          'the worker completes the flagged job as canceled');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :r), 'canceled', 'now in history as canceled');

SELECT is((SELECT count(*)::int FROM pgq.cancel('{}')), 0, 'empty array: nothing, no error');

-- Errors change nothing.
SELECT count(*)::int AS n0 FROM pgq.jobs \gset
SELECT throws_ok($$SELECT pgq.cancel(NULL)$$, 'PQ009', 'ids must be an array without NULLs, got NULL', 'NULL ids: PQ009');
SELECT throws_ok(format('SELECT pgq.cancel(ARRAY[%s, NULL]::bigint[])', :keep), 'PQ009', NULL, 'NULL element: PQ009');
SELECT row_eq(format('SELECT (SELECT count(*)::int FROM pgq.jobs), (SELECT status FROM pgq.jobs WHERE id = %s)', :keep),
              ROW(:n0, 'queued'::text), 'failed cancels changed nothing');

SELECT * FROM finish();
ROLLBACK;
