-- pgq.register_worker: announce, re-announce (started_at kept), defaults, validation; pgq.heartbeat
-- keeps the registry row fresh, also with empty arrays, with one update per call.
BEGIN;
SELECT plan(26);

SELECT has_table('pgq', 'workers', 'table pgq.workers');
SELECT columns_are('pgq', 'workers', ARRAY['worker_id', 'host', 'pid', 'application_name', 'entrypoints', 'version',
                                           'metadata', 'client_addr', 'timeout', 'started_at', 'last_seen_at'],
                   'pgq.workers columns');

SET LOCAL application_name = 'rw-test-app';
SELECT row_eq($$SELECT * FROM pgq.register_worker('11111111-1111-1111-1111-111111111111', '{rw.a,rw.b}', 'host-1', 4242,
                                                  version => '1.2.3', metadata => '{"concurrency": 8}',
                                                  at => now() - interval '1 minute')$$,
              ROW(now() - interval '1 minute', now() - interval '1 minute', interval '30 seconds', interval '10 seconds')::record,
              'first registration: started_at = last_seen_at = at; default timeout 30 s, heartbeat every 10 s');
SELECT row_eq($$SELECT host, pid, application_name, entrypoints, version, metadata, timeout FROM pgq.workers
                 WHERE worker_id = '11111111-1111-1111-1111-111111111111'$$,
              ROW('host-1'::text, 4242, 'rw-test-app'::text, '{rw.a,rw.b}'::text[], '1.2.3'::text,
                  '{"concurrency": 8}'::jsonb, interval '30 seconds'),
              'stored as given; application_name from the session when not given');
SELECT is((SELECT client_addr IS NOT DISTINCT FROM inet_client_addr() FROM pgq.workers
            WHERE worker_id = '11111111-1111-1111-1111-111111111111'), true, 'client_addr is the connection''s address');

-- Again, after a "reconnect": fields replaced, started_at kept, timeout kept unless given.
SELECT row_eq($$SELECT * FROM pgq.register_worker('11111111-1111-1111-1111-111111111111', '{rw.c}', 'host-2', 7,
                                                  'explicit-app', at => now())$$,
              ROW(now() - interval '1 minute', now(), interval '30 seconds', interval '10 seconds')::record,
              'registering again keeps started_at and moves last_seen_at');
SELECT row_eq($$SELECT host, pid, application_name, entrypoints, version, metadata FROM pgq.workers
                 WHERE worker_id = '11111111-1111-1111-1111-111111111111'$$,
              ROW('host-2'::text, 7, 'explicit-app'::text, '{rw.c}'::text[], NULL::text, '{}'::jsonb),
              'the new announcement replaces the old one (NULL metadata: {})');
SELECT row_eq($$SELECT gone_after, heartbeat_interval FROM pgq.register_worker('11111111-1111-1111-1111-111111111111',
                                                                              timeout => interval '90 seconds')$$,
              ROW(interval '90 seconds', interval '30 seconds'), 'a timeout of 90 s: heartbeat every 30 s');
SELECT is((SELECT timeout FROM pgq.workers WHERE worker_id = '11111111-1111-1111-1111-111111111111'),
          interval '90 seconds', 'stored');
SELECT is((SELECT timeout FROM pgq.register_worker('11111111-1111-1111-1111-111111111111') r
             JOIN pgq.workers w ON true WHERE w.worker_id = '11111111-1111-1111-1111-111111111111'),
          interval '90 seconds', 'a later registration without timeout keeps it');
SELECT is((SELECT entrypoints FROM pgq.workers WHERE worker_id = '11111111-1111-1111-1111-111111111111'), '{}'::text[],
          'no entrypoints: an empty array (a scheduler-only worker)');
SELECT is((SELECT count(*)::int FROM pgq.workers), 1, 'one row per worker');

-- pgq.heartbeat refreshes last_seen_at, also with empty arrays ------------------------------------
SELECT pgq.register_worker('22222222-2222-2222-2222-222222222222', '{rw.a}', at => now() - interval '10 minutes');
SELECT is((SELECT count(*)::int FROM pgq.heartbeat('22222222-2222-2222-2222-222222222222', '{}', '{}',
                                                    now() - interval '5 minutes')), 0, 'an idle worker heartbeats with no jobs');
SELECT is((SELECT last_seen_at FROM pgq.workers WHERE worker_id = '22222222-2222-2222-2222-222222222222'),
          now() - interval '5 minutes', 'and its last_seen_at moves to at');
SELECT pgq.enqueue('rw.a') AS j \gset
SELECT lease AS l FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{rw.a}', 1, now()) \gset
SELECT results_eq(format($$SELECT state FROM pgq.heartbeat('22222222-2222-2222-2222-222222222222', ARRAY[%s]::bigint[],
                                                           ARRAY[%s]::bigint[], now() + interval '3 seconds')$$, :j, :l),
                  ARRAY['ok'], 'a busy worker heartbeats its job');
SELECT is((SELECT last_seen_at FROM pgq.workers WHERE worker_id = '22222222-2222-2222-2222-222222222222'),
          now() + interval '3 seconds', 'the same call refreshed the registry');
SELECT is((SELECT last_seen_at FROM pgq.workers WHERE worker_id = '11111111-1111-1111-1111-111111111111'),
          now(), 'another worker''s row is untouched');
SELECT is((SELECT count(*)::int FROM pgq.heartbeat('33333333-3333-3333-3333-333333333333', '{}', '{}')), 0,
          'an unregistered worker may heartbeat: no error, no row');
SELECT is((SELECT count(*)::int FROM pgq.workers WHERE worker_id = '33333333-3333-3333-3333-333333333333'), 0,
          'and it is not registered by it');

-- Errors: nothing registered -------------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.register_worker(NULL)$$, 'PQ009', 'worker_id must not be NULL', 'NULL worker_id: PQ009');
SELECT throws_ok($$SELECT pgq.register_worker('44444444-4444-4444-4444-444444444444', ARRAY['ok', ''])$$, 'PQ001',
                 'invalid entrypoint '''': must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL', 'a bad entrypoint: PQ001');
SELECT throws_ok($$SELECT pgq.register_worker('44444444-4444-4444-4444-444444444444', host => repeat('h', 256))$$, 'PQ009',
                 'host must be at most 255 bytes, got 256', 'a host over 255 bytes: PQ009');
SELECT throws_ok($$SELECT pgq.register_worker('44444444-4444-4444-4444-444444444444', pid => 0)$$, 'PQ009',
                 'pid must be positive, got 0', 'pid 0: PQ009');
SELECT throws_ok($$SELECT pgq.register_worker('44444444-4444-4444-4444-444444444444', metadata => '[1]')$$, 'PQ009',
                 NULL, 'metadata not an object: PQ009');
SELECT throws_ok($$SELECT pgq.register_worker('44444444-4444-4444-4444-444444444444', timeout => interval '0.5 seconds')$$,
                 'PQ008', 'timeout must be between 1 second and 1 day, got 00:00:00.5', 'a timeout under 1 s: PQ008');
SELECT is((SELECT count(*)::int FROM pgq.workers WHERE worker_id = '44444444-4444-4444-4444-444444444444'), 0,
          'failed registrations stored nothing');

SELECT * FROM finish();
ROLLBACK;
