-- pgq.claim: argument errors, claim order, due time, claimed state, stale recovery,
-- concurrency limits and pausing.
-- Not covered here: PQ010 (claim outside READ COMMITTED). The isolation level of a transaction
-- cannot change after its first query, and this whole file is one transaction; the Python tests
-- call claim from a REPEATABLE READ transaction.
BEGIN;
SELECT plan(78);

-- Argument errors (nothing is claimed) ---------------------------------------------------------
SELECT pgq.enqueue('cl_err') AS err_id \gset
SELECT throws_ok($$SELECT * FROM pgq.claim(NULL, '{cl_err}')$$, 'PQ009', 'worker_id must not be NULL',
    'NULL worker_id: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', NULL)$$, 'PQ001',
    'entrypoints must be a non-empty array of non-empty names, got NULL', 'NULL entrypoints: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{}')$$, 'PQ001',
    'entrypoints must be a non-empty array of non-empty names, got {}', 'empty entrypoints: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', ARRAY['cl_err', NULL])$$, 'PQ001',
    'entrypoints must be a non-empty array of non-empty names, got {cl_err,NULL}', 'NULL among entrypoints: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', ARRAY['cl_err', ''])$$, 'PQ001',
    NULL, 'empty name among entrypoints: PQ001');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_err}', 0)$$, 'PQ002',
    'batch_size must be between 1 and 10000, got 0', 'batch_size 0: PQ002');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_err}', NULL)$$, 'PQ002',
    'batch_size must be between 1 and 10000, got NULL', 'batch_size NULL: PQ002');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_err}', 10001)$$, 'PQ002',
    'batch_size must be between 1 and 10000, got 10001', 'batch_size 10001: PQ002');
SELECT throws_ok($$SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_err}', -1)$$, 'PQ002',
    NULL, 'negative batch_size: PQ002');
SELECT row_eq(format('SELECT status, attempt, lease FROM pgq.jobs WHERE id = %s', :err_id),
              ROW('queued'::text, 0, NULL::bigint), 'failed claims left the job queued and untouched');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_err}', 10000)), 1,
          'batch_size 10000 is accepted');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_nobody}', 5)), 0,
          'an entrypoint never enqueued: nothing to claim, no error');

-- Claim order: priority desc, then ready order (enqueue order for jobs due at enqueue) -------
CREATE TEMP TABLE ord_jobs (name text, id bigint);
INSERT INTO ord_jobs VALUES
    ('a', pgq.enqueue('cl_ord', '{"n": "a"}', priority => 0,  run_at => now() - interval '3 seconds')),
    ('b', pgq.enqueue('cl_ord', '{"n": "b"}', priority => 5,  run_at => now() - interval '1 second')),
    ('c', pgq.enqueue('cl_ord', '{"n": "c"}', priority => 5,  run_at => now() - interval '2 seconds')),
    ('d', pgq.enqueue('cl_ord', '{"n": "d"}', priority => 0,  run_at => now() - interval '3 seconds')),
    ('e', pgq.enqueue('cl_ord', '{"n": "e"}', priority => -1, run_at => now() - interval '9 seconds')),
    ('f', pgq.enqueue('cl_ord', '{"n": "f"}', priority => 9,  run_at => now() + interval '1 second'));
SELECT is((SELECT c.payload ->> 'n' FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_ord}') c), 'b',
          'batch of 1 takes the highest priority, first enqueued job (ready order, not run_at)');
CREATE TEMP TABLE ord_got AS
SELECT c.*, c.ordinality AS pos
  FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_ord}', 10) WITH ORDINALITY AS c;
SELECT results_eq($$SELECT payload ->> 'n' FROM ord_got ORDER BY pos$$,
                  ARRAY['c', 'a', 'd', 'e'],
                  'then priority desc, ready order; the future job f is not due');
SELECT is((SELECT status FROM pgq.jobs WHERE id = (SELECT id FROM ord_jobs WHERE name = 'f')), 'scheduled',
          'a job due in the future stays scheduled (outside the claim index)');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_ord}', 10,
                                               now() + interval '999 milliseconds')), 0,
          'not claimed before its run_at');
SELECT is((SELECT c.id FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_ord}', 10,
                                      now() + interval '1 second') c),
          (SELECT id FROM ord_jobs WHERE name = 'f'), 'claimed once at passes its run_at');

-- Across entrypoints, only those asked for; batch_size bounds the result ----------------------
SELECT pgq.enqueue('cl_x', '{"n": 1}', priority => 1);
SELECT pgq.enqueue('cl_y', '{"n": 2}', priority => 3);
SELECT pgq.enqueue('cl_y', '{"n": 3}', priority => 2);
SELECT pgq.enqueue('cl_z', '{"n": 4}', priority => 9);
SELECT results_eq($$SELECT entrypoint, payload ->> 'n'
                      FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_x,cl_y}', 2)$$,
                  $$VALUES ('cl_y'::text, '2'::text), ('cl_y', '3')$$,
                  'claims across entrypoints by priority, at most batch_size');
SELECT results_eq($$SELECT entrypoint FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_x,cl_y}', 5)$$,
                  ARRAY['cl_x'], 'the rest; jobs of other entrypoints are never claimed');
SELECT is((SELECT status FROM pgq.jobs WHERE entrypoint = 'cl_z'), 'queued', 'cl_z was not asked for');

-- Claimed state and the claimed_job columns ---------------------------------------------------
SELECT pgq.configure('cl_state', max_attempts => 7, heartbeat_timeout => interval '45 seconds');
SELECT pgq.enqueue('cl_state', '{"k": 1}', priority => 4, run_at => now() - interval '1 minute',
                   dedupe_key => 'cl-state-1', headers => '{"h": "v"}') AS st_id \gset
SELECT pgq.enqueue('cl_state', '{"k": 2}') AS st_id2 \gset
CREATE TEMP TABLE st AS
SELECT * FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_state}', 5, now() + interval '10 seconds');
SELECT is((SELECT count(*)::int FROM st), 2, 'both jobs claimed');
SELECT row_eq(format('SELECT id, entrypoint, payload, headers, priority, attempt, enqueued_at, run_at, dedupe_key,
                             max_attempts, heartbeat_timeout FROM st WHERE id = %s', :st_id),
              ROW(:st_id::bigint, 'cl_state'::text, '{"k": 1}'::jsonb, '{"h": "v"}'::jsonb, 4, 1, now(),
                  now() - interval '1 minute', 'cl-state-1'::text, 7, interval '45 seconds'),
              'claimed_job carries the job and its policy (max_attempts, heartbeat_timeout)');
SELECT ok((SELECT bool_and(lease IS NOT NULL) FROM st), 'every claimed job has a lease');
SELECT is((SELECT count(DISTINCT lease)::int FROM st), 2, 'leases are distinct');
SELECT row_eq(format('SELECT status, worker_id, attempt, heartbeat_at, started_at, lease FROM pgq.jobs WHERE id = %s', :st_id),
              ROW('running'::text, '22222222-2222-2222-2222-222222222222'::uuid, 1, now() + interval '10 seconds',
                  now() + interval '10 seconds', (SELECT lease FROM st WHERE id = :st_id)),
              'the row is running, owned by the worker, attempt 1, heartbeat and start = at, same lease');
SELECT is((SELECT count(*)::int FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cl_state}', 5,
                                               now() + interval '11 seconds')), 0,
          'a running job with a fresh heartbeat is not claimed again');

-- Stale running jobs are claimed again -------------------------------------------------------
SELECT pgq.enqueue('cl_stale') AS s_id \gset
SELECT lease AS s_lease1 FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_stale}', 1, now()) \gset
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_stale}', 1,
                                               now() + interval '30 seconds')), 0,
          'heartbeat exactly 30 s old (the default timeout) is not stale yet');
SELECT * INTO TEMP s2 FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_stale}', 1, now() + interval '31 seconds');
SELECT is((SELECT id FROM s2), :s_id::bigint, 'after 31 s without heartbeat the job is claimed again');
SELECT isnt((SELECT lease FROM s2), :s_lease1::bigint, 'with a new lease');
SELECT is((SELECT attempt FROM s2), 2, 'and attempt + 1');
SELECT row_eq(format('SELECT worker_id, heartbeat_at, lease, status FROM pgq.jobs WHERE id = %s', :s_id),
              ROW('22222222-2222-2222-2222-222222222222'::uuid, now() + interval '31 seconds',
                  (SELECT lease FROM s2), 'running'::text),
              'the new worker owns it with a fresh heartbeat');
SELECT is((SELECT jsonb_array_length(errors) FROM pgq.jobs WHERE id = :s_id), 1, 'one error entry recorded');
SELECT is((SELECT errors -> 0 -> 'details' ->> 'error' FROM pgq.jobs WHERE id = :s_id), 'heartbeat timeout',
          'the error entry says heartbeat timeout');
SELECT is((SELECT (errors -> 0 ->> 'attempt')::int FROM pgq.jobs WHERE id = :s_id), 1,
          'the error entry names the attempt that timed out');
SELECT is((SELECT errors -> 0 -> 'details' ->> 'worker_id' FROM pgq.jobs WHERE id = :s_id),
          '11111111-1111-1111-1111-111111111111', 'and the worker that lost it');

-- A configured heartbeat_timeout is used.
SELECT pgq.configure('cl_hb5', heartbeat_timeout => interval '5 seconds');
SELECT pgq.enqueue('cl_hb5') AS hb5 \gset
SELECT id FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_hb5}', 1, now()) \gset
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_hb5}', 1,
                                               now() + interval '5 seconds')), 0, 'timeout 5 s: not stale at 5 s');
SELECT is((SELECT id FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_hb5}', 1,
                                    now() + interval '6 seconds')), :hb5::bigint, 'timeout 5 s: stale at 6 s');

-- A stale job with no attempts left goes to history as failed.
SELECT pgq.configure('cl_dead', max_attempts => 1);
SELECT pgq.enqueue('cl_dead', '{"d": 1}') AS dead_id \gset
SELECT id FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_dead}', 1, now()) \gset
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_dead}', 1,
                                               now() + interval '31 seconds')), 0,
          'a stale job whose attempts are used up is not claimed');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :dead_id), 'it left pgq.jobs');
SELECT row_eq(format('SELECT status, attempt, finished_at, payload, worker_id FROM pgq.job_history WHERE id = %s', :dead_id),
              ROW('failed'::text, 1, now() + interval '31 seconds', '{"d": 1}'::jsonb,
                  '11111111-1111-1111-1111-111111111111'::uuid),
              'it is in history as failed, finished at the claim time');
SELECT is((SELECT errors -> -1 -> 'details' ->> 'error' FROM pgq.job_history WHERE id = :dead_id), 'heartbeat timeout',
          'its last error is the heartbeat timeout');
SELECT is((SELECT details ->> 'error' FROM pgq.job_history WHERE id = :dead_id), 'heartbeat timeout',
          'and so are its details');

-- A stale job flagged for cancellation goes to history as canceled.
SELECT pgq.enqueue('cl_cxl') AS cxl_id \gset
SELECT id FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_cxl}', 1, now()) \gset
SELECT pgq.cancel(ARRAY[:cxl_id]::bigint[]);
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_cxl}', 1,
                                               now() + interval '31 seconds')), 0,
          'a stale job flagged for cancellation is not claimed');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :cxl_id), 'canceled', 'it is in history as canceled');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :cxl_id), 'and left pgq.jobs');

-- Concurrency limit: global across workers ---------------------------------------------------
SELECT pgq.configure('cl_lim', concurrency_limit => 2);
SELECT count(*) FROM (SELECT pgq.enqueue('cl_lim') FROM generate_series(1, 5)) AS e;
CREATE TEMP TABLE lim1 AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_lim}', 10);
SELECT is((SELECT count(*)::int FROM lim1), 2, 'limit 2, five queued: a batch of 10 gets 2');
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_lim}', 10)), 0,
          'another worker gets nothing while 2 run');
SELECT is((SELECT count(*)::int
             FROM pgq.complete('11111111-1111-1111-1111-111111111111',
                               (SELECT array_agg(id) FROM (SELECT id FROM lim1 ORDER BY id LIMIT 1) x),
                               (SELECT array_agg(lease) FROM (SELECT lease FROM lim1 ORDER BY id LIMIT 1) x),
                               '{successful}')), 1, 'one of them completes');
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_lim}', 10)), 1,
          'then exactly one more can be claimed');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'cl_lim' AND status = 'running'), 2,
          'never more than 2 running');
SELECT is((SELECT count(*)::int FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cl_lim,cl_free}', 10)), 0,
          'the limit holds when several entrypoints are asked for');
SELECT pgq.enqueue('cl_free');
SELECT is((SELECT entrypoint FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cl_lim,cl_free}', 10)), 'cl_free',
          'a limited entrypoint does not block an unlimited one');

-- Re-claiming a stale job of a limited entrypoint keeps within the limit.
SELECT pgq.configure('cl_lim1', concurrency_limit => 1);
SELECT pgq.enqueue('cl_lim1', run_at => now() - interval '1 minute') AS l1_old \gset
SELECT id FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_lim1}', 1, now()) \gset
SELECT pgq.enqueue('cl_lim1') AS l1_new \gset
SELECT results_eq($$SELECT id, attempt FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_lim1}', 10,
                                                      now() + interval '31 seconds')$$,
                  format('VALUES (%s::bigint, 1)', :l1_new),
                  'limit 1 with a stale job and a queued one: the stale job is queued again behind the queued one, one is claimed');
SELECT row_eq(format('SELECT status, attempt, errors -> 0 -> ''details'' ->> ''error'' FROM pgq.jobs WHERE id = %s', :l1_old),
              ROW('queued'::text, 1, 'heartbeat timeout'::text),
              'the stale job waits queued, its timeout noted');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'cl_lim1' AND status = 'running'), 1,
          'still one running');

-- Limit 0 pauses, also for stale jobs; lifting it resumes.
SELECT pgq.enqueue('cl_pause') AS p_stale \gset
SELECT id FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_pause}', 1, now()) \gset
SELECT pgq.enqueue('cl_pause') AS p_queued \gset
SELECT pgq.configure('cl_pause', concurrency_limit => 0);
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_pause}', 10)), 0,
          'limit 0: queued jobs are not claimed');
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_pause}', 10,
                                               now() + interval '1 minute')), 0,
          'limit 0: a stale job is not claimed again either');
SELECT row_eq(format('SELECT status, worker_id, attempt FROM pgq.jobs WHERE id = %s', :p_stale),
              ROW('running'::text, '11111111-1111-1111-1111-111111111111'::uuid, 1),
              'the stale job of a paused entrypoint is left as it was (not swept, not claimed)');
SELECT pgq.configure('cl_pause', reset => true);
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cl_pause}', 10,
                                               now() + interval '1 minute')), 2,
          'after the limit is lifted both are claimed');

-- Release of limited entrypoint policy rows is not needed: a claim that finds nothing still works
-- when called again in the same transaction (the lock is its own).
SELECT pgq.configure('cl_twice', concurrency_limit => 1);
SELECT pgq.enqueue('cl_twice');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_twice}', 1,
                                               now() - interval '1 hour')), 0, 'nothing due yet');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cl_twice}', 1)), 1,
          'a later claim in the same transaction still sees its limited entrypoint');

-- request_id: a claim sent again (its answer lost) answers the same jobs ------------------------
SELECT pgq.configure('cl_req', max_attempts => 2, heartbeat_timeout => interval '90 seconds');
SELECT count(*) FROM pgq.enqueue_many(ARRAY['cl_req', 'cl_req', 'cl_req']);
CREATE TEMP TABLE rq1 AS SELECT * FROM pgq.claim('44444444-4444-4444-4444-444444444444', '{cl_req}', 2,
                                                 request_id => 'aaaaaaaa-0000-0000-0000-000000000001');
SELECT is((SELECT count(*)::int FROM rq1), 2, 'the first claim takes two jobs');
SELECT set_eq($$SELECT id, lease, attempt FROM pgq.claim('44444444-4444-4444-4444-444444444444', '{cl_req}', 2,
                                                         request_id => 'aaaaaaaa-0000-0000-0000-000000000001')$$,
              'SELECT id, lease, attempt FROM rq1', 'sent again with the same request_id: the same jobs, leases and attempts');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'cl_req' AND status = 'running'), 2,
          'and nothing more was claimed');
SELECT is((SELECT count(*)::int FROM pgq.claim('55555555-5555-5555-5555-555555555555', '{cl_req}', 2,
                                               request_id => 'aaaaaaaa-0000-0000-0000-000000000001')), 1,
          'another worker with that request_id claims anew (the one job left)');
SELECT results_eq($$SELECT heartbeat_timeout_s, last_attempt FROM rq1 LIMIT 1$$,
                  $$VALUES (90::float8, false)$$, 'the answer carries heartbeat_timeout_s and last_attempt');
SELECT pgq.complete('44444444-4444-4444-4444-444444444444', ARRAY[id], ARRAY[lease], '{interrupted}')
  FROM rq1 ORDER BY id LIMIT 1;
SELECT is((SELECT count(*)::int FROM pgq.claim('44444444-4444-4444-4444-444444444444', '{cl_req}', 2,
                                               request_id => 'aaaaaaaa-0000-0000-0000-000000000001')), 1,
          'a job of that request that was completed meanwhile is not answered again');
SELECT pgq.complete('55555555-5555-5555-5555-555555555555', ARRAY[id], ARRAY[lease], '{failed}')
  FROM pgq.jobs WHERE entrypoint = 'cl_req' AND worker_id = '55555555-5555-5555-5555-555555555555';
SELECT is((SELECT array_agg(attempt || ':' || last_attempt ORDER BY attempt)
             FROM pgq.claim('66666666-6666-6666-6666-666666666666', '{cl_req}', 5, now() + interval '1 hour')),
          ARRAY['1:false', '2:true', '2:true'], 'max_attempts 2: the second attempt is the last (the interrupted one was not counted; the stale one was)');

-- A replay answers in the claim's order (priority, then ready order: here enqueue order, which
-- is not run_at order), and once none of its jobs still runs under it, it is an ordinary claim.
SELECT pgq.enqueue('cl_rord', '{"n": "a"}') AS ra \gset
SELECT pgq.enqueue('cl_rord', '{"n": "b"}', run_at => now() - interval '1 hour') AS rb \gset
SELECT pgq.enqueue('cl_rord', '{"n": "c"}') AS rc \gset
SELECT is((SELECT array_agg(id) FROM pgq.claim('77777777-7777-7777-7777-777777777777', '{cl_rord}', 2,
                                              request_id => 'aaaaaaaa-0000-0000-0000-000000000002')),
          ARRAY[:ra, :rb]::bigint[], 'a claim answers in ready order (enqueue order), not run_at order');
SELECT is((SELECT array_agg(id) FROM pgq.claim('77777777-7777-7777-7777-777777777777', '{cl_rord}', 2,
                                              request_id => 'aaaaaaaa-0000-0000-0000-000000000002')),
          ARRAY[:ra, :rb]::bigint[], 'the replay answers in the same order');
SELECT pgq.complete('77777777-7777-7777-7777-777777777777', array_agg(id), array_agg(lease),
                    array_fill('successful'::text, ARRAY[count(*)::int]))
  FROM pgq.jobs WHERE entrypoint = 'cl_rord' AND status = 'running';
SELECT is((SELECT array_agg(id) FROM pgq.claim('77777777-7777-7777-7777-777777777777', '{cl_rord}', 2,
                                              request_id => 'aaaaaaaa-0000-0000-0000-000000000002')),
          ARRAY[:rc]::bigint[], 'a replay after all its jobs finished is an ordinary claim: the next job');

-- Jobs not due are 'scheduled' (outside the claim index); a claim promotes them once due ----------
SELECT pgq.enqueue('cl_sched', '{"n": 1}', priority => 32767, delay => interval '1 hour') AS sc1 \gset
SELECT pgq.enqueue('cl_sched', '{"n": 2}') AS sc2 \gset
SELECT is((SELECT array_agg(status ORDER BY id) FROM pgq.jobs WHERE entrypoint = 'cl_sched'),
          ARRAY['scheduled', 'queued'], 'a delayed job is scheduled, a due one queued');
SELECT results_eq($$SELECT id FROM pgq.claim('77777777-7777-7777-7777-777777777777', '{cl_sched}', 5)$$,
                  format('VALUES (%s::bigint)', :sc2), 'a claim now takes the due job only');
SELECT is(pgq.next_run_at('{cl_sched}'), now() + interval '1 hour', 'next_run_at: when the scheduled job is due');
SELECT results_eq($$SELECT id, attempt FROM pgq.claim('77777777-7777-7777-7777-777777777777', '{cl_sched}', 1,
                                                     now() + interval '1 hour')$$,
                  format('VALUES (%s::bigint, 1)', :sc1), 'once due, the claim promotes it and claims it');

-- A lease names the slot its job was claimed in (lease mod 4): pgq.complete looks there first ----
SELECT last_value AS ring_before FROM pgq.ring_seq \gset
SELECT setval('pgq.ring_seq', 5);
SELECT pgq.enqueue('cl_slots', '{"n": 1}') AS sl1 \gset
SELECT setval('pgq.ring_seq', 6);
SELECT pgq.enqueue('cl_slots', '{"n": 2}') AS sl2 \gset
SELECT setval('pgq.ring_seq', 7);
SELECT pgq.enqueue('cl_slots', '{"n": 3}') AS sl3 \gset
CREATE TEMP TABLE sl AS
SELECT * FROM pgq.claim('88888888-8888-8888-8888-888888888888', '{cl_slots}', 5);
SELECT results_eq($$SELECT j.slot::int, s.lease % 4 FROM sl s JOIN pgq.jobs j ON j.id = s.id ORDER BY j.id$$,
                  $$VALUES (1, 1::bigint), (2, 2::bigint), (3, 3::bigint)$$,
                  'jobs claimed from slots 1, 2 and 3 at once: each lease names its job''s slot');
SELECT is((SELECT count(*)::int FROM pgq.complete('88888888-8888-8888-8888-888888888888',
                                                 ARRAY(SELECT id FROM sl ORDER BY id), ARRAY(SELECT lease FROM sl ORDER BY id),
                                                 '{successful,successful,successful}')),
          3, 'one completion of jobs in three slots finishes all three');
SELECT is((SELECT array_agg(lease % 4 ORDER BY id) FROM pgq.job_history WHERE entrypoint = 'cl_slots'),
          ARRAY[1, 2, 3]::bigint[], 'their history rows keep the leases');
SELECT setval('pgq.ring_seq', :ring_before);

SELECT * FROM finish();
ROLLBACK;
