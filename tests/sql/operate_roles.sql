-- Who may see and steer: pgq_reader reads (metrics, workers, jobs with payloads), pgq_admin acts
-- (pause, resume, bulk requeue/delete), producers read results by id, workers register and run
-- the maintenance steps. Checked by acting as each role.
BEGIN;
SELECT plan(22);

SELECT has_role('pgq_reader');
SELECT has_role('pgq_admin');
SELECT pgq.enqueue('or.a', '{"secret": 1}') AS j \gset

SELECT lives_ok(format($q$DO $do$ BEGIN
                     SET LOCAL ROLE pgq_reader;
                     PERFORM count(*) FROM pgq.metrics();
                     PERFORM count(*) FROM pgq.worker_status;
                     PERFORM count(*) FROM pgq.queue_stats;
                     PERFORM count(*) FROM pgq.schedules;
                     PERFORM * FROM pgq.job(%s);
                     PERFORM * FROM pgq.job_results(ARRAY[%s]::bigint[]);
                     PERFORM * FROM pgq.list_jobs('or.a', 'queued');
                     PERFORM * FROM pgq.find_history();
                     PERFORM * FROM pgq.history_summary();
                     RESET ROLE;
                  END $do$ $q$, :j, :j), 'pgq_reader: metrics, worker_status, queue_stats, schedules, job, job_results, list_jobs, find_history');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_reader; PERFORM pgq.pause('{or.a}'); END $do$ $q$,
                 '42501', 'permission denied for function pause', 'pgq_reader may not pause');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_reader; PERFORM pgq.requeue_history(); END $do$ $q$,
                 '42501', 'permission denied for function requeue_history', 'pgq_reader may not requeue');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_reader; PERFORM pgq.enqueue('or.a'); END $do$ $q$,
                 '42501', 'permission denied for function enqueue', 'pgq_reader may not enqueue');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_reader; PERFORM count(*) FROM pgq.jobs; END $do$ $q$,
                 '42501', 'permission denied for table jobs', 'pgq_reader reads no table directly');

SELECT lives_ok($q$DO $do$ BEGIN
                     SET LOCAL ROLE pgq_admin;
                     PERFORM pgq.pause('{or.a}');
                     PERFORM pgq.resume('{or.a}');
                     PERFORM pgq.requeue_history('or.a');
                     PERFORM pgq.delete_history('or.a');
                     PERFORM pgq.prune_workers();
                     PERFORM pgq.rollup_metrics();
                     PERFORM count(*) FROM pgq.metrics();
                     PERFORM * FROM pgq.find_history();
                     RESET ROLE;
                  END $do$ $q$, 'pgq_admin: pause, resume, requeue_history, delete_history, prune_workers, rollup_metrics, and reads');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_admin;
                     PERFORM * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{or.a}'); END $do$ $q$,
                 '42501', 'permission denied for function claim', 'pgq_admin does not run jobs');

SELECT lives_ok(format($q$DO $do$ BEGIN
                     SET LOCAL ROLE pgq_producer;
                     PERFORM * FROM pgq.job_results(ARRAY[%s]::bigint[]);
                     PERFORM count(*) FROM pgq.metrics();
                     PERFORM count(*) FROM pgq.worker_status;
                     RESET ROLE;
                  END $do$ $q$, :j), 'pgq_producer: job_results, metrics, worker_status');
SELECT throws_ok(format($q$DO $do$ BEGIN SET LOCAL ROLE pgq_producer; PERFORM * FROM pgq.job(%s); END $do$ $q$, :j),
                 '42501', 'permission denied for function job', 'pgq_producer may not read payloads (pgq.job)');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_producer; PERFORM pgq.pause('{or.a}'); END $do$ $q$,
                 '42501', 'permission denied for function pause', 'pgq_producer may not pause');

SELECT lives_ok($q$DO $do$ BEGIN
                     SET LOCAL ROLE pgq_worker;
                     PERFORM pgq.register_worker('11111111-1111-1111-1111-111111111111', '{or.a}');
                     PERFORM pgq.heartbeat('11111111-1111-1111-1111-111111111111', '{}', '{}');
                     PERFORM pgq.prune_workers();
                     PERFORM pgq.rollup_metrics();
                     PERFORM count(*) FROM pgq.metrics();
                     PERFORM * FROM pgq.job_results('{}');
                     PERFORM pgq.unregister_worker('11111111-1111-1111-1111-111111111111');
                     RESET ROLE;
                  END $do$ $q$, 'pgq_worker: register, heartbeat, prune_workers, rollup_metrics, metrics, job_results, unregister');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_worker; PERFORM pgq.resume('{or.a}'); END $do$ $q$,
                 '42501', 'permission denied for function resume', 'pgq_worker may not resume');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_worker; PERFORM pgq.delete_history(); END $do$ $q$,
                 '42501', 'permission denied for function delete_history', 'pgq_worker may not delete history');
-- Schedules: registering one enqueues any job with any payload: pgq_admin's right, not a worker's.
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_worker;
                     PERFORM pgq.schedule('or.s', 'admin.delete_everything', '* * * * *', now()); END $do$ $q$,
                 '42501', 'permission denied for function schedule', 'pgq_worker may not register or change a schedule');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_worker; PERFORM pgq.unschedule('or.s'); END $do$ $q$,
                 '42501', 'permission denied for function unschedule', 'pgq_worker may not remove a schedule');
SELECT lives_ok($q$DO $do$ BEGIN
                     SET LOCAL ROLE pgq_admin;
                     PERFORM pgq.schedule('or.s', 'or.a', '* * * * *', now());
                     PERFORM pgq.unschedule('or.s');
                     PERFORM pgq.schedule('or.s', 'or.a', '* * * * *', now());
                     PERFORM pgq.prune_entrypoints();
                     RESET ROLE;
                  END $do$ $q$, 'pgq_admin: schedule, unschedule, prune_entrypoints');
SELECT lives_ok($q$DO $do$ DECLARE v_lease bigint; BEGIN
                     SET LOCAL ROLE pgq_worker;
                     SELECT c.lease INTO v_lease FROM pgq.claim_schedules('11111111-1111-1111-1111-111111111111') c WHERE c.name = 'or.s';
                     PERFORM pgq.release_schedule('11111111-1111-1111-1111-111111111111', 'or.s', v_lease, 'test');
                     PERFORM pgq.next_schedule_at();
                     PERFORM pgq.prune_entrypoints();
                     RESET ROLE;
                  END $do$ $q$, 'pgq_worker: claim_schedules, release_schedule, next_schedule_at, prune_entrypoints');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_producer; PERFORM pgq.prune_entrypoints(); END $do$ $q$,
                 '42501', 'permission denied for function prune_entrypoints', 'pgq_producer may not prune entrypoints');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_producer;
                     PERFORM pgq.enqueue('or.a', dedupe_key => 'pgq:schedule:or.s@2030-01-01T00:00:00.000000Z'); END $do$ $q$,
                 'PQ009', NULL, 'a producer cannot take the dedupe key of a scheduled tick');
SELECT is(current_user::text, 'postgres', 'back to the test''s own role');

SELECT * FROM finish();
ROLLBACK;
