-- pgq.cancel: queued jobs to history as canceled, running jobs flagged; unknown ids ignored.
BEGIN;
SELECT plan(23);

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

-- Dedupe keys live in pgq.live_keys: a cancel frees the key of a queued or scheduled job at once;
-- a running job keeps its key until its worker completes it.
SELECT pgq.enqueue('cx_k', dedupe_key => 'cx-k-queued') AS kq \gset
SELECT pgq.enqueue('cx_k', dedupe_key => 'cx-k-scheduled', delay => interval '1 hour') AS ks \gset
SELECT pgq.enqueue('cx_k_run', dedupe_key => 'cx-k-running') AS kr \gset
SELECT lease AS krl FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cx_k_run}', 1, now()) \gset
SELECT is((SELECT tableoid::regclass::text FROM pgq.jobs WHERE id = :ks), 'pgq.jobs_scheduled', 'setup: one job scheduled');
SELECT set_eq(format('SELECT * FROM pgq.cancel(ARRAY[%s, %s, %s]::bigint[])', :kq, :ks, :kr),
              format('VALUES (%s::bigint), (%s), (%s)', :kq, :ks, :kr), 'the queued, scheduled and running job');
SELECT results_eq($$SELECT dedupe_key, status FROM pgq.job_history WHERE entrypoint = 'cx_k' ORDER BY id$$,
                  $$VALUES ('cx-k-queued'::text, 'canceled'::text), ('cx-k-scheduled', 'canceled')$$,
                  'the queued and the scheduled job are in history as canceled');
SELECT results_eq($$SELECT dedupe_key, job_id FROM pgq.live_keys WHERE dedupe_key LIKE 'cx-k-%' ORDER BY 1$$,
                  format($$VALUES ('cx-k-running'::text, %s::bigint)$$, :kr),
                  'their keys left pgq.live_keys; the flagged running job keeps its key');
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:kr]::bigint[], ARRAY[:krl]::bigint[], '{canceled}');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.live_keys WHERE dedupe_key = 'cx-k-running'),
          'the running job''s key is freed when its worker completes it');
SELECT isnt(pgq.enqueue('cx_k', dedupe_key => 'cx-k-scheduled'), :ks::bigint, 'a freed key can be taken by a new job');

SELECT * FROM finish();
ROLLBACK;
