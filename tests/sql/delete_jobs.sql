-- pgq.delete_jobs: delete finished jobs by id; live jobs and unknown ids are left alone.
BEGIN;
SELECT plan(8);

SELECT pgq.configure('dj', max_attempts => 1);
SELECT array_agg(id ORDER BY id) AS ids FROM pgq.enqueue_many(array_fill('dj'::text, ARRAY[3])) AS id \gset
DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{dj}', 2) LOOP
        PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease],
                             ARRAY[CASE WHEN c.id % 2 = 0 THEN 'successful' ELSE 'failed' END]);
    END LOOP;
END
$$;
SELECT id AS live FROM pgq.jobs WHERE entrypoint = 'dj' \gset

SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE entrypoint = 'dj'), 2, 'two finished jobs');
SELECT is((SELECT array_agg(d ORDER BY d) FROM pgq.delete_jobs(:'ids'::bigint[] || ARRAY[-1::bigint]) AS d),
          (SELECT array_agg(id ORDER BY id) FROM pgq.job_history WHERE entrypoint = 'dj' AND id <> :live),
          'returns the finished ids it deleted (any status), not the live one nor an unknown id');
SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE entrypoint = 'dj'), 0, 'history rows gone');
SELECT is((SELECT status FROM pgq.jobs WHERE id = :live), 'queued', 'the live job is untouched');
SELECT is((SELECT count(*)::int FROM pgq.delete_jobs('{}')), 0, 'an empty array is a no-op');
SELECT throws_ok($$SELECT pgq.delete_jobs(ARRAY[1, NULL])$$, 'PQ009', NULL, 'a NULL id: PQ009');
SELECT throws_ok($$SELECT pgq.delete_jobs(array_fill(1::bigint, ARRAY[10001]))$$, 'PQ002', NULL,
                 'over 10000 ids: PQ002');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_reader; PERFORM pgq.delete_jobs('{1}'); END $do$ $q$,
                 '42501', 'permission denied for function delete_jobs', 'pgq_reader may not delete');

SELECT * FROM finish();
ROLLBACK;
