-- pgq.requeue: failed (dead) and canceled history rows back in the queue; successful ignored;
-- dedupe key clash raises PQ007 and changes nothing.
BEGIN;
SELECT plan(21);

SELECT pgq.configure('rq', max_attempts => 1);
SELECT pgq.enqueue('rq', '{"d": 1}', priority => 4, dedupe_key => 'rq-dead', headers => '{"h": 1}') AS dead \gset
SELECT pgq.enqueue('rq', '{"c": 1}', priority => 1) AS cxl \gset
SELECT pgq.enqueue('rq', '{"s": 1}', priority => 0) AS ok_ \gset
CREATE TEMP TABLE c AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{rq}', 1, now());
SELECT is((SELECT id FROM c), :dead::bigint, 'setup: the job to fail is claimed');
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:dead]::bigint[], (SELECT array_agg(lease) FROM c),
                    '{failed}', '[{"error": "boom"}]', now());
SELECT pgq.cancel(ARRAY[:cxl]::bigint[]);
CREATE TEMP TABLE c2 AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{rq}', 1, now());
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:ok_]::bigint[], (SELECT array_agg(lease) FROM c2), '{successful}');
SELECT results_eq($$SELECT status FROM pgq.job_history WHERE entrypoint = 'rq' ORDER BY id$$,
                  ARRAY['failed', 'canceled', 'successful'], 'setup: one dead, one canceled, one successful');

SELECT set_eq(format('SELECT * FROM pgq.requeue(ARRAY[%s, %s, %s, -3]::bigint[], now() + interval ''5 minutes'')', :dead, :cxl, :ok_),
              format('VALUES (%s::bigint), (%s)', :dead, :cxl), 'returns the failed and canceled ids only');
SELECT row_eq(format($$SELECT status, attempt, run_at, payload, headers, priority, dedupe_key, enqueued_at, lease, worker_id
                         FROM pgq.jobs WHERE id = %s$$, :dead),
              ROW('scheduled'::text, 0, now() + interval '5 minutes', '{"d": 1}'::jsonb, '{"h": 1}'::jsonb, 4, 'rq-dead'::text,
                  now(), NULL::bigint, NULL::uuid),
              'the dead job is queued again: same id, payload, headers, priority, dedupe key; attempt 0, due at `at`');
SELECT is((SELECT errors -> 0 -> 'details' ->> 'error' FROM pgq.jobs WHERE id = :dead), 'boom', 'its error list is kept');
SELECT is((SELECT status FROM pgq.jobs WHERE id = :cxl), 'scheduled', 'the canceled job is queued again (due in 5 minutes: scheduled)');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.job_history WHERE id IN (:dead, :cxl)), 'both left history');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :ok_), 'successful', 'the successful job stays in history');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :ok_), 'and is not queued');
SELECT is((SELECT id FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{rq}', 1, now() + interval '5 minutes')), :dead::bigint,
          'the requeued job can be claimed, as attempt 1');

-- Dedupe clash: PQ007, nothing requeued, history kept.
SELECT pgq.enqueue('rq2', dedupe_key => 'rq-key') AS holder0 \gset
SELECT pgq.cancel(ARRAY[:holder0]::bigint[]);
SELECT pgq.enqueue('rq2') AS other0 \gset
SELECT pgq.cancel(ARRAY[:other0]::bigint[]);
SELECT pgq.enqueue('rq2', dedupe_key => 'rq-key') AS live \gset
SELECT count(*)::int AS jobs0 FROM pgq.jobs \gset
SELECT throws_ok(format('SELECT pgq.requeue(ARRAY[%s, %s]::bigint[])', :other0, :holder0), 'PQ007',
    'cannot requeue: dedupe key ''rq-key'' is held by a live job', 'the dedupe key is held by a live job: PQ007');
SELECT results_eq(format('SELECT id, status FROM pgq.job_history WHERE id IN (%s, %s) ORDER BY id', :holder0, :other0),
                  format($$VALUES (%s::bigint, 'canceled'::text), (%s, 'canceled')$$, :holder0, :other0),
                  'both history rows are kept');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :jobs0, 'nothing was requeued, not even the job without a key');

-- Argument errors.
SELECT throws_ok($$SELECT pgq.requeue(NULL)$$, 'PQ009', 'ids must be an array without NULLs, got NULL', 'NULL ids: PQ009');
SELECT throws_ok(format('SELECT pgq.requeue(ARRAY[%s, NULL]::bigint[])', :other0), 'PQ009', NULL, 'NULL element: PQ009');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :other0), 'canceled', 'failed calls changed nothing');

-- Ring storage: due now -> queued in a ring slot with a ready number; later -> jobs_scheduled;
-- the key taken again in pgq.live_keys.
SELECT pgq.enqueue('rq3', dedupe_key => 'rq3-a') AS a3 \gset
SELECT pgq.enqueue('rq3') AS b3 \gset
SELECT pgq.cancel(ARRAY[:a3, :b3]::bigint[]);
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.live_keys WHERE dedupe_key = 'rq3-a'), 'setup: the canceled job''s key is free');
SELECT pgq.requeue(ARRAY[:a3]::bigint[]);
SELECT pgq.requeue(ARRAY[:b3]::bigint[], now() + interval '1 hour');
SELECT row_eq(format('SELECT status, slot < 4, ready_seq IS NOT NULL FROM pgq.jobs WHERE id = %s', :a3),
              ROW('queued'::text, true, true), 'due now: queued in a ring slot with a ready number');
SELECT row_eq(format('SELECT status, tableoid::regclass::text, ready_seq FROM pgq.jobs WHERE id = %s', :b3),
              ROW('scheduled'::text, 'pgq.jobs_scheduled'::text, NULL::bigint), 'due later: scheduled, in jobs_scheduled');
SELECT is((SELECT job_id FROM pgq.live_keys WHERE dedupe_key = 'rq3-a'), :a3::bigint, 'its dedupe key is held again');
SELECT throws_ok($$SELECT pgq.enqueue('rq3', dedupe_key => 'rq3-a')$$, 'PQ007', NULL,
                 'so a new job with the key is refused');

SELECT * FROM finish();
ROLLBACK;
