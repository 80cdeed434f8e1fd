-- View pgq.worker_status: active / gone / unregistered, the jobs each worker holds.
BEGIN;
SELECT plan(9);

SELECT has_view('pgq', 'worker_status', 'view pgq.worker_status');
SELECT pgq.configure('ws', heartbeat_timeout => interval '1 minute');
SELECT pgq.enqueue_many(ARRAY['ws', 'ws', 'ws', 'ws'], run_ats => array_fill(now() - interval '1 hour', ARRAY[4]));
SELECT pgq.register_worker('11111111-1111-1111-1111-111111111111', '{ws}', 'h1', 11);
SELECT pgq.register_worker('22222222-2222-2222-2222-222222222222', '{ws}', 'h2', 22, timeout => interval '1 minute',
                           at => now() - interval '2 minutes');
SELECT count(*) FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{ws}', 2, now());
-- worker 3 never registered (an older client) and holds one job
SELECT count(*) FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{ws}', 1, now());
-- worker 2 claimed 1 job 2 minutes ago and went silent: its job is stale
SELECT count(*) FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{ws}', 1, now() - interval '2 minutes');

SELECT results_eq($$SELECT worker_id::text, state, host, running, stale FROM pgq.worker_status ORDER BY worker_id$$,
                  $$VALUES ('11111111-1111-1111-1111-111111111111', 'active', 'h1'::text, 2::bigint, 0::bigint),
                           ('22222222-2222-2222-2222-222222222222', 'gone', 'h2', 1, 1),
                           ('33333333-3333-3333-3333-333333333333', 'unregistered', NULL, 1, 0)$$,
                  'active, gone (silent past its timeout, its job stale), unregistered (holds a job)');
SELECT is((SELECT job_ids FROM pgq.worker_status WHERE worker_id = '11111111-1111-1111-1111-111111111111'),
          (SELECT array_agg(id ORDER BY id) FROM pgq.jobs WHERE worker_id = '11111111-1111-1111-1111-111111111111'),
          'job_ids: the jobs it holds');
SELECT is((SELECT silent_s FROM pgq.worker_status WHERE worker_id = '22222222-2222-2222-2222-222222222222'), 120::float8,
          'silent_s: seconds since last seen');
SELECT pgq.heartbeat('22222222-2222-2222-2222-222222222222', '{}', '{}');
SELECT is((SELECT state FROM pgq.worker_status WHERE worker_id = '22222222-2222-2222-2222-222222222222'), 'active',
          'a heartbeat (even with no jobs) makes it active again');
SELECT pgq.register_worker('44444444-4444-4444-4444-444444444444');
SELECT row_eq($$SELECT state, running, job_ids FROM pgq.worker_status WHERE worker_id = '44444444-4444-4444-4444-444444444444'$$,
              ROW('active'::text, 0::bigint, '{}'::bigint[]), 'an idle worker: running 0, no jobs');
SELECT is((SELECT state FROM pgq.worker_status WHERE worker_id = '11111111-1111-1111-1111-111111111111'), 'active',
          'seen right now: active');
SELECT pgq.register_worker('55555555-5555-5555-5555-555555555555', at => now() - interval '30 seconds');
SELECT is((SELECT state FROM pgq.worker_status WHERE worker_id = '55555555-5555-5555-5555-555555555555'), 'active',
          'silent exactly its timeout (30 s): still active');
SELECT pgq.register_worker('66666666-6666-6666-6666-666666666666', at => now() - interval '30.001 seconds');
SELECT is((SELECT state FROM pgq.worker_status WHERE worker_id = '66666666-6666-6666-6666-666666666666'), 'gone',
          'a millisecond longer: gone');

SELECT * FROM finish();
ROLLBACK;
