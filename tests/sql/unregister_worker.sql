-- pgq.unregister_worker: a clean stop removes the registry row; jobs are left alone.
BEGIN;
SELECT plan(6);

SELECT pgq.register_worker('11111111-1111-1111-1111-111111111111', '{uw}');
SELECT pgq.enqueue('uw') AS j \gset
SELECT count(*) FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{uw}');
SELECT is(pgq.unregister_worker('11111111-1111-1111-1111-111111111111'), true, 'a registered worker: true');
SELECT is((SELECT count(*)::int FROM pgq.workers), 0, 'its row is gone');
SELECT is((SELECT status FROM pgq.jobs WHERE id = :j), 'running', 'the job it holds is not touched');
SELECT is(pgq.unregister_worker('11111111-1111-1111-1111-111111111111'), false, 'again: false');
SELECT is(pgq.unregister_worker('22222222-2222-2222-2222-222222222222'), false, 'never registered: false');
SELECT throws_ok($$SELECT pgq.unregister_worker(NULL)$$, 'PQ009', 'worker_id must not be NULL', 'NULL: PQ009');

SELECT * FROM finish();
ROLLBACK;
