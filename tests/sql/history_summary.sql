-- pgq.history_summary: finished jobs per entrypoint and status, filtered by entrypoints and id.
BEGIN;
SELECT plan(4);

SELECT pgq.enqueue_many(ARRAY['hs_a', 'hs_a', 'hs_b']);
CREATE TEMP TABLE c AS SELECT id, lease, entrypoint FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{hs_a,hs_b}', 3, now());
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', array_agg(id ORDER BY id), array_agg(lease ORDER BY id),
                    ARRAY['successful', 'canceled', 'successful'], at => now() + interval '2 seconds')
  FROM c;

SELECT results_eq($$SELECT entrypoint, status, jobs, max_attempt, avg_latency_s FROM pgq.history_summary()$$,
                  $$VALUES ('hs_a'::text, 'canceled'::text, 1::bigint, 1, 2::float8),
                           ('hs_a', 'successful', 1, 1, 2),
                           ('hs_b', 'successful', 1, 1, 2)$$,
                  'one row per entrypoint and status: count, most attempts, mean seconds to finish');
SELECT is((SELECT sum(jobs)::int FROM pgq.history_summary(ARRAY['hs_b'])), 1, 'filtered by entrypoint');
SELECT is((SELECT sum(jobs)::int FROM pgq.history_summary(NULL, (SELECT max(id) FROM c))), 1, 'filtered by id');
SELECT is((SELECT count(*)::int FROM pgq.history_summary(ARRAY['nothing'])), 0, 'nothing finished: no rows');

SELECT * FROM finish();
ROLLBACK;
