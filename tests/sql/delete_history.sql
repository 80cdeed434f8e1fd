-- pgq.delete_history: bulk delete of history rows by filter, bounded per call.
BEGIN;
SELECT plan(7);

SELECT pgq.configure('dh', max_attempts => 1);
DO $$
DECLARE c record;
BEGIN
    PERFORM pgq.enqueue_many(array_fill('dh'::text, ARRAY[5]));
    FOR c IN SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{dh}', 5) LOOP
        PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease],
                             ARRAY[CASE WHEN c.id % 5 = 0 THEN 'successful' ELSE 'failed' END],
                             jsonb_build_array(jsonb_build_object('error', CASE WHEN c.id % 2 = 0 THEN 'Even' ELSE 'Odd' END)));
    END LOOP;
END
$$;
SELECT count(*) AS failed FROM pgq.job_history WHERE entrypoint = 'dh' AND status = 'failed' \gset
SELECT count(*) AS even FROM pgq.job_history WHERE entrypoint = 'dh' AND status = 'failed' AND details ->> 'error' = 'Even' \gset

SELECT is(pgq.delete_history('dh', error => 'even'), :even::bigint, 'deletes the failed jobs whose error matches');
SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE entrypoint = 'dh' AND details ->> 'error' = 'Even' AND status = 'failed'), 0,
          'they are gone');
SELECT is(pgq.delete_history('dh', max_jobs => 1), 1::bigint, 'max_jobs bounds a call');
SELECT is(pgq.delete_history('dh'), (:failed - :even - 1)::bigint, 'the rest of the failed ones');
SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE entrypoint = 'dh' AND status = 'successful'), 1,
          'the successful job is kept (statuses default to failed)');
SELECT is(pgq.delete_history('dh', '{successful}'), 1::bigint, 'statuses successful');
SELECT throws_ok($$SELECT pgq.delete_history(max_jobs => 0)$$, 'PQ002', NULL, 'max_jobs 0: PQ002');

SELECT * FROM finish();
ROLLBACK;
