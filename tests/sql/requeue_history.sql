-- pgq.requeue_history: bulk redrive by filter, newest first, bounded, skipping held dedupe keys.
BEGIN;
SELECT plan(12);

SELECT pgq.configure('rh', max_attempts => 1);
CREATE TEMP TABLE rh_ids AS
SELECT k, pgq.enqueue('rh', jsonb_build_object('k', k), dedupe_key => CASE WHEN k = 2 THEN 'rh-key' END) AS id
  FROM generate_series(1, 6) AS k;
DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{rh}', 6) LOOP
        PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease],
                             ARRAY[CASE WHEN (c.payload ->> 'k')::int = 6 THEN 'successful' ELSE 'failed' END],
                             jsonb_build_array(jsonb_build_object('error', CASE WHEN (c.payload ->> 'k')::int <= 3 THEN 'Timeout' ELSE 'Other' END)),
                             now() - (10 - (c.payload ->> 'k')::int) * interval '1 minute');
    END LOOP;
END
$$;
-- k = 1..5 failed (k = 5 newest), k = 6 successful; a live job now holds k = 2's dedupe key
SELECT pgq.enqueue('rh', dedupe_key => 'rh-key') AS holder \gset

SELECT results_eq($$SELECT * FROM pgq.requeue_history('rh', error => 'timeout', max_jobs => 1)$$,
                  $$SELECT id FROM rh_ids WHERE k = 3$$, 'max_jobs 1: the newest matching (Timeout, k = 3)');
SELECT results_eq($$SELECT * FROM pgq.requeue_history('rh', error => 'timeout', max_jobs => 10)$$,
                  $$SELECT id FROM rh_ids WHERE k = 1$$,
                  'the next call: k = 1; k = 2 is left out, a live job holds its dedupe key');
SELECT is((SELECT status FROM pgq.job_history WHERE id = (SELECT id FROM rh_ids WHERE k = 2)), 'failed', 'k = 2 stays dead');
SELECT row_eq(format('SELECT status, attempt, run_at FROM pgq.jobs WHERE id = %s', (SELECT id FROM rh_ids WHERE k = 1)),
              ROW('queued'::text, 0, now()), 'requeued as pgq.requeue does: queued, attempt 0, due now');
SELECT is((SELECT count(*)::int FROM pgq.requeue_history('rh', error => 'timeout')), 0, 'nothing left that can be requeued');
SELECT results_eq($$SELECT * FROM pgq.requeue_history('rh', since => now() - interval '5 minutes 30 seconds',
                                                       at => now() + interval '1 hour')$$,
                  $$SELECT id FROM rh_ids WHERE k = 5$$, 'since: only the job that finished 5 minutes ago');
SELECT is((SELECT run_at FROM pgq.jobs WHERE id = (SELECT id FROM rh_ids WHERE k = 5)), now() + interval '1 hour', 'due at `at`');
SELECT results_eq($$SELECT * FROM pgq.requeue_history()$$, $$SELECT id FROM rh_ids WHERE k = 4$$,
                  'no filter: all failed of every entrypoint (k = 4 is the only one left that can go)');
SELECT is((SELECT status FROM pgq.job_history WHERE id = (SELECT id FROM rh_ids WHERE k = 6)), 'successful',
          'successful jobs are never requeued');

SELECT throws_ok($$SELECT * FROM pgq.requeue_history(statuses => '{successful}')$$, 'PQ009',
                 'only failed and canceled jobs can be requeued, got statuses {successful}', 'successful: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.requeue_history(max_jobs => 10001)$$, 'PQ002', 'max_jobs must be between 1 and 10000, got 10001',
                 'max_jobs over 10000: PQ002');
SELECT throws_ok($$SELECT * FROM pgq.requeue_history(E'bad\nname')$$, 'PQ001', NULL, 'a bad entrypoint: PQ001');

SELECT * FROM finish();
ROLLBACK;
