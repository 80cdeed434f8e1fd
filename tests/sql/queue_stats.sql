-- Views: pgq.queue_stats (queued, due, running, stale, oldest queued age, policy) and pgq.failed_jobs.
BEGIN;
SELECT plan(14);

SELECT pgq.configure('qs', concurrency_limit => 10, max_attempts => 1, heartbeat_timeout => interval '1 minute');
SELECT pgq.configure('qs_empty');
-- qs: 2 due, 1 in the future, 1 running fresh, 1 running stale (heartbeat 2 minutes old).
SELECT pgq.enqueue('qs', '{"n": "run1"}', priority => 9, run_at => now() - interval '10 minutes');
SELECT pgq.enqueue('qs', '{"n": "run2"}', priority => 8, run_at => now() - interval '10 minutes');
CREATE TEMP TABLE c AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{qs}', 2, now() - interval '2 minutes');
SELECT count(*) FROM c, LATERAL pgq.heartbeat('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease], now()) h
 WHERE c.payload ->> 'n' = 'run2';
SELECT pgq.enqueue('qs', '{"n": "due1"}') AS due1 \gset
SELECT pgq.enqueue('qs', '{"n": "due2"}', run_at => now() - interval '1 second');
SELECT pgq.enqueue('qs', '{"n": "later"}', run_at => now() + interval '1 hour');
UPDATE pgq.jobs SET enqueued_at = now() - interval '3 hours' WHERE id = :due1;
SELECT pgq.enqueue('qs_other');

SELECT row_eq($$SELECT queued, due, running, stale FROM pgq.queue_stats WHERE entrypoint = 'qs'$$,
              ROW(3::bigint, 2::bigint, 2::bigint, 1::bigint),
              'queued 3 (one not due yet), due 2, running 2, stale 1');
SELECT is((SELECT oldest_queued_age FROM pgq.queue_stats WHERE entrypoint = 'qs'), interval '3 hours',
          'oldest_queued_age: age of the oldest queued job');
SELECT row_eq($$SELECT concurrency_limit, max_attempts, heartbeat_timeout FROM pgq.queue_stats WHERE entrypoint = 'qs'$$,
              ROW(10, 1, interval '1 minute'), 'the policy columns');
SELECT row_eq($$SELECT queued, due, running, stale, oldest_queued_age FROM pgq.queue_stats WHERE entrypoint = 'qs_empty'$$,
              ROW(0::bigint, 0::bigint, 0::bigint, 0::bigint, NULL::interval),
              'an entrypoint without jobs: zeros, no age');
SELECT row_eq($$SELECT queued, due, running FROM pgq.queue_stats WHERE entrypoint = 'qs_other'$$,
              ROW(1::bigint, 1::bigint, 0::bigint), 'counts are per entrypoint');
SELECT is((SELECT count(*)::int FROM pgq.queue_stats WHERE entrypoint = 'qs'), 1, 'one row per entrypoint');

-- The stale job with no attempts left goes to history as failed at the next claim.
SELECT count(*) FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{qs}', 1, now() + interval '30 seconds');
SELECT row_eq($$SELECT queued, running, stale FROM pgq.queue_stats WHERE entrypoint = 'qs'$$,
              ROW(2::bigint, 2::bigint, 0::bigint), 'after a claim: the stale job is gone, one more running');

-- failed_jobs: dead jobs only.
SELECT is((SELECT count(*)::int FROM pgq.failed_jobs WHERE entrypoint = 'qs'), 1, 'failed_jobs lists the dead job');
SELECT is((SELECT payload ->> 'n' FROM pgq.failed_jobs WHERE entrypoint = 'qs'), 'run1', 'with its payload');
SELECT is((SELECT errors -> -1 -> 'details' ->> 'error' FROM pgq.failed_jobs WHERE entrypoint = 'qs'), 'heartbeat timeout',
          'and its errors');
SELECT pgq.enqueue('qs_c') AS c1 \gset
SELECT pgq.cancel(ARRAY[:c1]::bigint[]);
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.failed_jobs WHERE id = :c1), 'canceled jobs are not in failed_jobs');
SELECT pgq.configure('qs_s');
SELECT pgq.enqueue('qs_s') AS s1 \gset
SELECT id AS s1, lease AS s1_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{qs_s}') \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:s1]::bigint[], ARRAY[:s1_l]::bigint[], '{successful}');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.failed_jobs WHERE id = :s1), 'successful jobs are not in failed_jobs');
SELECT has_column('pgq', 'failed_jobs', 'errors', 'failed_jobs has errors');
SELECT hasnt_column('pgq', 'failed_jobs', 'status', 'failed_jobs has no status column (all are failed)');

SELECT * FROM finish();
ROLLBACK;
