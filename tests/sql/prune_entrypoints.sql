-- pgq.prune_entrypoints: removes entrypoint rows nobody needs; keeps configured, paused, used and
-- scheduled ones; a removed entrypoint comes back with the next enqueue.
BEGIN;
SELECT plan(9);

SELECT count(*) FROM pgq.enqueue_many(ARRAY['pe.done', 'pe.live', 'pe.conf', 'pe.paused', 'pe.sched']);
SELECT count(*) FROM pgq.cancel(ARRAY(SELECT id FROM pgq.jobs WHERE entrypoint <> 'pe.live'));
SELECT pgq.configure('pe.conf', max_attempts => 3);
SELECT pgq.pause('{pe.paused}');
SELECT pgq.schedule('pe.s', 'pe.sched', '* * * * *', now());
UPDATE pgq.entrypoints SET updated_at = now() - interval '2 days' WHERE entrypoint LIKE 'pe.%';

SELECT is(pgq.prune_entrypoints(at => now() - interval '3 days'), 0::bigint, 'nothing unchanged for a day before that');
SELECT is(pgq.prune_entrypoints(), 1::bigint, 'one row removed');
SELECT results_eq($$SELECT entrypoint FROM pgq.entrypoints WHERE entrypoint LIKE 'pe.%' ORDER BY 1$$,
                  $$VALUES ('pe.conf'::text), ('pe.live'), ('pe.paused'), ('pe.sched')$$,
                  'kept: configured, with a live job, paused, named by a schedule');
SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE entrypoint = 'pe.done'), 1, 'history keeps the name');
SELECT lives_ok($$SELECT pgq.enqueue('pe.done')$$, 'the next enqueue works');
SELECT is((SELECT max_attempts FROM pgq.entrypoints WHERE entrypoint = 'pe.done'), 5, 'and brings the row back with the defaults');
SELECT throws_ok($$SELECT pgq.prune_entrypoints('-1 day')$$, 'PQ008', NULL, 'negative older_than: PQ008');
SELECT throws_ok($$SELECT pgq.prune_entrypoints(lock_wait => '2 minutes')$$, 'PQ008', NULL, 'lock_wait over a minute: PQ008');
SELECT throws_ok($$SELECT pgq.prune_entrypoints(at => 'infinity')$$, 'PQ009', NULL, 'at infinity: PQ009');

SELECT * FROM finish();
ROLLBACK;
