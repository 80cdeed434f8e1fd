-- pgq.job: one job by id, live or finished, with timings, errors, result and schedule.
BEGIN;
SELECT plan(15);

SELECT pgq.configure('jb', max_attempts => 2);
SELECT pgq.enqueue('jb', '{"n": 1}', priority => 3, dedupe_key => 'jb-1', headers => '{"h": 1}') AS q \gset
SELECT row_eq(format('SELECT id, entrypoint, status, priority, attempt, max_attempts, payload, headers, dedupe_key FROM pgq.job(%s)', :q),
              ROW(:q::bigint, 'jb'::text, 'queued'::text, 3, 0, 2, '{"n": 1}'::jsonb, '{"h": 1}'::jsonb, 'jb-1'::text),
              'a queued job: identity, policy and payload');
SELECT row_eq(format('SELECT enqueued_at, run_at, started_at, heartbeat_at, finished_at, wait_s, run_s, worker_id, result, errors FROM pgq.job(%s)', :q),
              ROW(now(), now(), NULL::timestamptz, NULL::timestamptz, NULL::timestamptz, NULL::float8, NULL::float8,
                  NULL::uuid, NULL::jsonb, '[]'::jsonb),
              'queued: due now, not started, no errors');

-- running, claimed 5 s after enqueue, 20 s ago
UPDATE pgq.jobs SET enqueued_at = now() - interval '25 seconds', run_at = now() - interval '25 seconds' WHERE id = :q;
SELECT lease AS ql FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{jb}', 1, now() - interval '20 seconds') \gset
SELECT row_eq(format('SELECT status, attempt, started_at, heartbeat_at, wait_s, run_s, worker_id, cancel_requested FROM pgq.job(%s)', :q),
              ROW('running'::text, 1, now() - interval '20 seconds', now() - interval '20 seconds', 5::float8, 20::float8,
                  '11111111-1111-1111-1111-111111111111'::uuid, false),
              'running: started, heartbeat, waited 5 s, running for 20 s, its worker');

-- failed once: queued again with the error in errors
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:q]::bigint[], ARRAY[:ql]::bigint[], '{failed}',
                    jsonb_build_array('{"error": "ValueError", "message": "boom", "traceback": "Traceback ..."}'::jsonb),
                    now() - interval '19 seconds');
SELECT row_eq(format($$SELECT status, attempt, started_at, errors -> 0 -> 'details' ->> 'message', jsonb_array_length(errors) FROM pgq.job(%s)$$, :q),
              ROW('scheduled'::text, 1, NULL::timestamptz, 'boom'::text, 1),
              'after a failed attempt: back in the queue due later (scheduled), attempt 1, the error in errors');

-- second attempt fails: dead
SELECT lease AS ql2 FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{jb}', 1, now() + interval '1 hour') \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:q]::bigint[], ARRAY[:ql2]::bigint[], '{failed}',
                    jsonb_build_array('{"error": "ValueError", "message": "boom again"}'::jsonb), now() + interval '1 hour 2 seconds');
SELECT row_eq(format($$SELECT status, attempt, finished_at, run_s, result, details ->> 'message', jsonb_array_length(errors) FROM pgq.job(%s)$$, :q),
              ROW('failed'::text, 2, now() + interval '1 hour 2 seconds', 2::float8, NULL::jsonb, 'boom again'::text, 2),
              'dead: finished, run 2 s, no result, the last details, both errors');
SELECT is((SELECT run_at FROM pgq.job(:q)), NULL, 'a finished job has no run_at');

-- successful with a result
SELECT pgq.enqueue('jb', '{"n": 2}') AS s \gset
SELECT lease AS sl FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{jb}', 1, now()) \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:s]::bigint[], ARRAY[:sl]::bigint[], '{successful}',
                    jsonb_build_array('{"result": {"sent": 3}}'::jsonb), now() + interval '1.5 seconds');
SELECT row_eq(format('SELECT status, result, details, run_s, wait_s FROM pgq.job(%s)', :s),
              ROW('successful'::text, '{"sent": 3}'::jsonb, '{"result": {"sent": 3}}'::jsonb, 1.5::float8, 0::float8),
              'successful: the handler''s result');
SELECT pgq.enqueue('jb') AS s2 \gset
SELECT lease AS sl2 FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{jb}', 1, now()) \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:s2]::bigint[], ARRAY[:sl2]::bigint[], '{successful}');
SELECT is((SELECT result FROM pgq.job(:s2)), NULL, 'no details: no result');

-- canceled while queued
SELECT pgq.enqueue('jb') AS c \gset
SELECT pgq.cancel(ARRAY[:c]::bigint[]);
SELECT row_eq(format('SELECT status, started_at, wait_s, run_s FROM pgq.job(%s)', :c),
              ROW('canceled'::text, NULL::timestamptz, NULL::float8, NULL::float8), 'canceled before it started: no wait or run');

-- requeued: live again, errors kept
SELECT pgq.requeue(ARRAY[:q]::bigint[]);
SELECT row_eq(format('SELECT status, attempt, jsonb_array_length(errors), finished_at FROM pgq.job(%s)', :q),
              ROW('queued'::text, 0, 2, NULL::timestamptz), 'requeued: queued again with its errors');

-- fired by a schedule
SELECT pgq.schedule('jb.sched', 'jb', '* * * * *', now() - interval '1 minute');
SELECT lease AS fl FROM pgq.claim_schedules('22222222-2222-2222-2222-222222222222') \gset
SELECT job_id AS f FROM pgq.fire_schedule('22222222-2222-2222-2222-222222222222', 'jb.sched', :fl, now(), now()) \gset
SELECT row_eq(format('SELECT schedule, schedule_due_at FROM pgq.job(%s)', :f),
              ROW('jb.sched'::text, now() - interval '1 minute'), 'a fired job names its schedule and tick');
SELECT pgq.enqueue('jb', headers => '{"pgq_schedule": "fake", "pgq_due_at": "not a time"}') AS fake \gset
SELECT row_eq(format('SELECT schedule, schedule_due_at FROM pgq.job(%s)', :fake),
              ROW(NULL::text, NULL::timestamptz), 'headers set by hand do not make a schedule (and do not break the call)');

SELECT is((SELECT count(*)::int FROM pgq.job(-42)), 0, 'an unknown id: no row');
SELECT is((SELECT count(*)::int FROM pgq.job(:q)), 1, 'one row');
SELECT throws_ok($$SELECT * FROM pgq.job(NULL)$$, 'PQ009', 'id must not be NULL', 'NULL id: PQ009');

SELECT * FROM finish();
ROLLBACK;
