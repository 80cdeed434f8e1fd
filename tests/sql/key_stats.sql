-- pgq.key_stats: the busiest keys of key-limited entrypoints, who is at the limit; bad input.
BEGIN;
SELECT plan(6);

SELECT pgq.configure('ks', key_concurrency_limit => 1);
SELECT count(*) FROM pgq.enqueue_many('{ks,ks,ks,ks,ks}', group_keys => '{a,a,a,b,NULL}');
SELECT pgq.enqueue('ks_unlimited', group_key => 'a');
SELECT count(*) FROM pgq.claim('00000000-0000-0000-0000-0000000000d1', '{ks}', 10);

SELECT results_eq($$SELECT entrypoint, group_key, queued, running, key_concurrency_limit, at_limit FROM pgq.key_stats()$$,
                  $$VALUES ('ks'::text, 'a'::text, 2::bigint, 1::bigint, 1, true),
                           ('ks', 'b', 0::bigint, 1::bigint, 1, true)$$,
                  'per key of a key-limited entrypoint: queued, running, the limit, at the limit (most queued first)');
SELECT is((SELECT count(*) FROM pgq.key_stats('{ks}', 1)), 1::bigint, 'max_keys keys per entrypoint');
SELECT is((SELECT count(*) FROM pgq.key_stats('{ks_unlimited}')), 0::bigint, 'entrypoints without a key limit are left out');
SELECT throws_ok($$SELECT * FROM pgq.key_stats(NULL, 0)$$, 'PQ002', 'max_keys must be between 1 and 1000, got 0',
                 'max_keys out of range: PQ002 naming it');
SELECT lives_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_reader; PERFORM * FROM pgq.key_stats(); RESET ROLE; END $do$ $q$,
                'pgq_reader may read it');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_producer; PERFORM * FROM pgq.key_stats(); END $do$ $q$,
                 '42501', 'permission denied for function key_stats', 'pgq_producer may not');

SELECT * FROM finish();
ROLLBACK;
