-- pgq.find_by_dedupe_key: the live job holding a key first, then finished ones, newest first.
BEGIN;
SELECT plan(9);

SELECT pgq.configure('fk', max_attempts => 1);
SELECT pgq.enqueue('fk', dedupe_key => 'order-1') AS first \gset
DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{fk}', 1) LOOP
        PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease],
                             ARRAY['failed'], jsonb_build_array('{"error": "Boom", "message": "no stock"}'::jsonb));
    END LOOP;
END
$$;
SELECT pgq.enqueue('fk', dedupe_key => 'order-1') AS second \gset
SELECT pgq.enqueue('fk', dedupe_key => 'order-2') AS third \gset

SELECT is((SELECT array_agg(id) FROM pgq.find_by_dedupe_key('order-1')), ARRAY[:second, :first]::bigint[],
          'the live job first, then the finished one');
SELECT is((SELECT array_agg(status) FROM pgq.find_by_dedupe_key('order-1')), ARRAY['queued', 'failed'],
          'with their status');
SELECT is((SELECT (error, message) FROM pgq.find_by_dedupe_key('order-1') WHERE id = :first),
          ('Boom'::text, 'no stock'::text), 'the error of the finished one');
SELECT is((SELECT cursor FROM pgq.find_by_dedupe_key('order-1') WHERE id = :second),
          (SELECT cursor FROM pgq.list_jobs('fk', 'queued') WHERE id = :second),
          'a queued job''s cursor is the one pgq.list_jobs gives it');
SELECT is((SELECT array_agg(l.id) FROM pgq.list_jobs('fk', 'queued',
                                                     (SELECT cursor FROM pgq.find_by_dedupe_key('order-1') WHERE id = :second)) l),
          ARRAY[:third]::bigint[], 'and pgq.list_jobs pages on from it');
SELECT is((SELECT count(*)::int FROM pgq.find_by_dedupe_key('order-1', 1)), 1, 'max_rows bounds the answer');
SELECT is((SELECT count(*)::int FROM pgq.find_by_dedupe_key('nope')), 0, 'an unknown key: no rows');
SELECT throws_ok($$SELECT * FROM pgq.find_by_dedupe_key(NULL)$$, 'PQ009', NULL, 'NULL key: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.find_by_dedupe_key('k', 0)$$, 'PQ002', NULL, 'max_rows 0: PQ002');

SELECT * FROM finish();
ROLLBACK;
