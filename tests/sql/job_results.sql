-- pgq.job_results: status and result by id for waiting producers; one row per id in input order.
BEGIN;
SELECT plan(7);

SELECT pgq.configure('jr', max_attempts => 1);
SELECT pgq.enqueue('jr', '{"secret": 1}') AS ok_id \gset
SELECT pgq.enqueue('jr') AS bad_id \gset
SELECT pgq.enqueue('jr') AS run_id \gset
SELECT pgq.enqueue('jr') AS q_id \gset
CREATE TEMP TABLE c AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{jr}', 3);
SELECT pgq.complete('11111111-1111-1111-1111-111111111111',
                    ARRAY(SELECT id FROM c WHERE id IN (:ok_id, :bad_id) ORDER BY id),
                    ARRAY(SELECT lease FROM c WHERE id IN (:ok_id, :bad_id) ORDER BY id),
                    '{successful,failed}', '[{"result": [1, 2]}, {"error": "KeyError", "message": "k"}]');
SELECT pgq.enqueue('jr') AS can_id \gset
SELECT pgq.cancel(ARRAY[:can_id]::bigint[]);

SELECT results_eq(
    format('SELECT id, status, finished, result, error ->> ''error'', attempt FROM pgq.job_results(ARRAY[%s, %s, %s, %s, %s, -7]::bigint[])',
           :q_id, :bad_id, :ok_id, :run_id, :can_id),
    format($$VALUES (%s::bigint, 'queued'::text, false, NULL::jsonb, NULL::text, 0),
                    (%s, 'failed', true, NULL, 'KeyError', 1),
                    (%s, 'successful', true, '[1, 2]', NULL, 1),
                    (%s, 'running', false, NULL, NULL, 1),
                    (%s, 'canceled', true, NULL, NULL, 0),
                    (-7, 'unknown', false, NULL, NULL, NULL)$$, :q_id, :bad_id, :ok_id, :run_id, :can_id),
    'one row per id in input order: live, finished with result or error, unknown');
SELECT is((SELECT finished_at FROM pgq.job_results(ARRAY[:ok_id]::bigint[])), now(), 'finished_at of a finished job');
SELECT is((SELECT count(*)::int FROM pgq.job_results('{}')), 0, 'empty array: no rows');
SELECT throws_ok($$SELECT * FROM pgq.job_results(NULL)$$, 'PQ009', 'ids must be an array without NULLs, got NULL', 'NULL: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.job_results(ARRAY[1, NULL])$$, 'PQ009', NULL, 'a NULL element: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.job_results(ARRAY(SELECT generate_series(1, 10001))::bigint[])$$, 'PQ009',
                 'at most 10000 ids per call, got 10001', 'more than 10000 ids: PQ009');
SELECT is((SELECT array_agg(p.name::text ORDER BY p.ord)
             FROM pg_proc f, unnest(f.proargnames, f.proargmodes) WITH ORDINALITY AS p(name, mode, ord)
            WHERE f.oid = 'pgq.job_results(bigint[])'::regprocedure AND p.mode = 't'),
          ARRAY['id', 'status', 'finished', 'result', 'error', 'attempt', 'finished_at'],
          'the result columns: no payload or headers');

SELECT * FROM finish();
ROLLBACK;
