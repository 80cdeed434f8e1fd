-- pgq.entrypoint_config: the policy rows for readers, by entrypoint.
BEGIN;
SELECT plan(6);

SELECT pgq.configure('ec.b', max_attempts => 7, backoff_base => '3 seconds');
SELECT pgq.enqueue('ec.a');
SELECT pgq.pause('{ec.b}');

SELECT is((SELECT array_agg(entrypoint) FROM pgq.entrypoint_config('{ec.b,ec.a,ec.none}')),
          ARRAY['ec.a', 'ec.b'], 'the rows of the names asked for, by entrypoint; unknown names left out');
SELECT is((SELECT (max_attempts, backoff_base) FROM pgq.entrypoint_config('{ec.b}')),
          (7, interval '3 seconds'), 'the stored policy');
SELECT ok((SELECT paused_at IS NOT NULL AND paused_by = session_user FROM pgq.entrypoint_config('{ec.b}')),
          'the pause and who paused');
SELECT ok((SELECT count(*) >= 2 FROM pgq.entrypoint_config()), 'NULL: every entrypoint');
SELECT lives_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_reader; PERFORM * FROM pgq.entrypoint_config(); RESET ROLE; END $do$ $q$,
                'pgq_reader may read it');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_producer; PERFORM * FROM pgq.entrypoint_config(); END $do$ $q$,
                 '42501', 'permission denied for function entrypoint_config', 'pgq_producer may not');

SELECT * FROM finish();
ROLLBACK;
