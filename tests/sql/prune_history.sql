-- pgq.prune_history: deletes history rows older than at - older_than, oldest first, at most batch.
BEGIN;
SELECT plan(21);

-- Six finished jobs, finished 1..6 days ago.
CREATE TEMP TABLE fin (id bigint, days int);
INSERT INTO fin SELECT pgq.enqueue('ph', jsonb_build_object('d', g)), g FROM generate_series(1, 6) g;
SELECT count(*) FROM fin f, LATERAL pgq.cancel(ARRAY[f.id], now() - f.days * interval '1 day') x;
SELECT is((SELECT count(*)::int FROM pgq.job_history), 6, 'setup: six history rows');
SELECT pgq.enqueue('ph', run_at => now() - interval '1 year') AS live \gset

SELECT is(pgq.prune_history(interval '10 days'), 0::bigint, 'nothing older than 10 days: 0');
SELECT is(pgq.prune_history(interval '3 days 1 hour', batch => 2), 2::bigint, 'batch 2: deletes 2 of the 3 old enough');
SELECT set_eq('SELECT id FROM pgq.job_history', 'SELECT id FROM fin WHERE days <= 4',
              'the oldest went first (6 and 5 days old)');
SELECT is(pgq.prune_history(interval '3 days 1 hour', batch => 2), 1::bigint, 'the next call deletes the last one: less than batch');
SELECT is(pgq.prune_history(interval '3 days 1 hour'), 0::bigint, 'then nothing is left to prune');
SELECT set_eq('SELECT id FROM pgq.job_history', 'SELECT id FROM fin WHERE days <= 3', 'newer rows are kept');
SELECT is(pgq.prune_history(interval '2 days', now() + interval '1 day'), 2::bigint,
          'at moves the cutoff: a day later, older than 2 days means the 3- and 2-day-old rows');
SELECT set_eq('SELECT id FROM pgq.job_history', 'SELECT id FROM fin WHERE days = 1',
              'the row finished exactly at the cutoff is kept');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE id = :live), 1, 'a live job is never pruned');

SELECT throws_ok($$SELECT pgq.prune_history(interval '-1 day')$$, 'PQ008',
    'older_than must be a non-negative interval, got -1 days', 'negative older_than: PQ008');
SELECT throws_ok($$SELECT pgq.prune_history(NULL)$$, 'PQ008', NULL, 'NULL older_than: PQ008');
SELECT throws_ok($$SELECT pgq.prune_history(interval '1 day', batch => 0)$$, 'PQ008',
    'batch must be between 1 and 100000, got 0', 'batch 0: PQ008');
SELECT throws_ok($$SELECT pgq.prune_history(interval '0', batch => 100001)$$, 'PQ008', NULL, 'batch 100001: PQ008');
SELECT throws_ok($$SELECT pgq.prune_history(interval '0', batch => NULL)$$, 'PQ008', NULL, 'NULL batch: PQ008');
SELECT is((SELECT count(*)::int FROM pgq.job_history), 1, 'failed calls deleted nothing');
SELECT is(pgq.prune_history(interval '0', now() + interval '1 second'), 1::bigint, 'older_than 0 prunes everything finished before at');

-- A workflow's edges go with its last job: a canceled chain of two, pruned one job at a time.
CREATE TEMP TABLE wf AS SELECT array_agg(id) AS ids FROM pgq.enqueue_many('{ph.a,ph.b}', depends_on => '[null,[1]]');
SELECT count(*) FROM pgq.cancel((SELECT ids[2:2] FROM wf), now() - interval '2 days');
SELECT count(*) FROM pgq.cancel((SELECT ids[1:1] FROM wf), now() - interval '1 day');
SELECT is(pgq.prune_history(interval '36 hours'), 1::bigint, 'the child, finished first, is pruned');
SELECT is((SELECT count(*)::int FROM pgq.job_deps WHERE workflow_id = (SELECT ids[1] FROM wf)), 1, 'the edge stays while the parent is in history');
SELECT is(pgq.prune_history(interval '0'), 1::bigint, 'then the parent');
SELECT is((SELECT count(*)::int FROM pgq.job_deps WHERE workflow_id = (SELECT ids[1] FROM wf)), 0, 'and the edge with it');

SELECT * FROM finish();
ROLLBACK;
