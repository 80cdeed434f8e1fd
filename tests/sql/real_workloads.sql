-- Real workloads: run time limits (pgq.configure run_timeout, pgq.enqueue timeout, the claim's
-- run_timeout_s and deadline, pgq.heartbeat's timed_out, the sweep of pgq.maintain), bounded
-- interruptions, snoozes, fatal outcomes, and the claim's taken_over.
BEGIN;
SELECT plan(54);

\set w '''11111111-1111-1111-1111-111111111111'''
\set w2 '''22222222-2222-2222-2222-222222222222'''

-- Bounds and errors -------------------------------------------------------------------------
SELECT throws_ok($$SELECT pgq.configure('rw_b', run_timeout => interval '0.5 seconds')$$, 'PQ008',
    'run_timeout (0 for none) must be between 00:00:01 and 30 days, got 00:00:00.5', 'run_timeout under 1 s: PQ008 naming it');
SELECT throws_ok($$SELECT pgq.configure('rw_b', run_timeout => interval '31 days')$$, 'PQ008',
    'run_timeout (0 for none) must be between 00:00:01 and 30 days, got 31 days', 'run_timeout over 30 days: PQ008');
SELECT throws_ok($$SELECT pgq.configure('rw_b', max_interruptions => -1)$$, 'PQ008',
    'max_interruptions must be between 0 and 1000, got -1', 'max_interruptions negative: PQ008');
SELECT throws_ok($$SELECT pgq.configure('rw_b', max_snoozes => 10001)$$, 'PQ008',
    'max_snoozes must be between 0 and 10000, got 10001', 'max_snoozes too large: PQ008');
SELECT throws_ok($$SELECT pgq.enqueue('rw_b', timeout => interval '0')$$, 'PQ009',
    'timeout must be between 00:00:01 and 30 days, got 00:00:00', 'a job timeout of 0: PQ009 naming it');
SELECT throws_ok($$SELECT pgq.enqueue_many('{rw_b,rw_b}', timeouts => ARRAY[interval '1 minute', interval '40 days'])$$, 'PQ009',
    'timeout at position 2 must be between 00:00:01 and 30 days, got 40 days', 'enqueue_many: the bad timeout and its position');
SELECT throws_ok($$SELECT pgq.enqueue_many('{rw_b,rw_b}', timeouts => ARRAY[interval '1 minute'])$$, 'PQ003',
    'timeouts has 1 elements but entrypoints has 2', 'enqueue_many: timeouts of another length');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'rw_b'), 0, 'nothing was added by the refused calls');
SELECT is((SELECT row(run_timeout, max_interruptions, max_snoozes)::text FROM pgq.configure('rw_b')),
          '(,3,100)', 'defaults: no run timeout, 3 interruptions, 100 snoozes');
SELECT is((SELECT run_timeout FROM pgq.configure('rw_b', run_timeout => interval '2 minutes')), interval '2 minutes',
          'run_timeout is stored');
SELECT is((SELECT run_timeout FROM pgq.configure('rw_b', max_attempts => 3)), interval '2 minutes',
          'NULL leaves it unchanged');
SELECT is((SELECT run_timeout FROM pgq.configure('rw_b', run_timeout => interval '0')), NULL::interval,
          'interval 0 removes the limit');

-- The claim carries the limit; the job's own timeout wins -----------------------------------
SELECT pgq.configure('rw_t', run_timeout => interval '10 seconds', max_attempts => 2,
                     backoff_base => interval '5 seconds', backoff_max => interval '5 seconds');
SELECT pgq.enqueue('rw_t', '{"n": 1}') AS t1 \gset
SELECT id AS t2 FROM pgq.enqueue_many('{rw_t}', timeouts => ARRAY[interval '3 seconds']) \gset
SELECT pgq.enqueue('rw_free') AS f1 \gset
SELECT is((SELECT array_agg(run_timeout_s ORDER BY id)::text
             FROM pgq.claim(:w, '{rw_t}', 10, now())), '{10,3}',
          'run_timeout_s: the entrypoint''s, and the job''s own where it has one');
SELECT is((SELECT run_timeout_s FROM pgq.claim(:w, '{rw_free}', 1, now())), NULL::float8,
          'no limit: run_timeout_s NULL');
SELECT is((SELECT deadline_at FROM pgq.jobs WHERE id = :t2), now() + interval '3 seconds',
          'the claim writes the attempt''s deadline');
SELECT lease AS t1_l FROM pgq.jobs WHERE id = :t1 \gset
SELECT lease AS t2_l FROM pgq.jobs WHERE id = :t2 \gset

-- Heartbeat past the deadline: timed_out, the attempt failed by SQL --------------------------
SELECT is((SELECT array_agg(state ORDER BY id)::text
             FROM pgq.heartbeat(:w, ARRAY[:t1, :t2]::bigint[], ARRAY[:t1_l, :t2_l]::bigint[], now() + interval '4 seconds')),
          '{ok,timed_out}', 'heartbeat: ok within the limit, timed_out past it');
SELECT is((SELECT row(status, attempt, lease IS NULL,
                      run_at >= now() + interval '6.5 seconds' AND run_at < now() + interval '9 seconds')::text
             FROM pgq.jobs WHERE id = :t2),
          '(scheduled,1,t,t)',
          'the timed-out attempt is a failed one: retried after the backoff (5 s, equal jitter), attempt counted');
SELECT is((SELECT errors -> -1 -> 'details' ->> 'message' FROM pgq.jobs WHERE id = :t2), 'timed out after 3 s',
          'its error says timed out after N s');
SELECT is((SELECT (errors -> -1 ->> 'decision') || ' ' || (errors -> -1 -> 'details' ->> 'error') FROM pgq.jobs WHERE id = :t2),
          'retry timed out', 'decision retry, error timed out');
SELECT is((SELECT count(*)::int FROM pgq.complete(:w, ARRAY[:t2]::bigint[], ARRAY[:t2_l]::bigint[], '{successful}')), 1,
          'a result sent later under that lease is answered (with the decision made) ...');
SELECT is((SELECT status FROM pgq.jobs WHERE id = :t2), 'scheduled', '... and changes nothing');
SELECT is((SELECT state FROM pgq.heartbeat(:w, ARRAY[:t2]::bigint[], ARRAY[:t2_l]::bigint[], now() + interval '5 seconds')),
          'timed_out', 'a later heartbeat under that lease still answers timed_out (not lost)');
SELECT is((SELECT state FROM pgq.heartbeat(:w2, ARRAY[:t2]::bigint[], ARRAY[:t2_l]::bigint[], now() + interval '5 seconds')),
          'lost', 'another worker naming that lease: lost');

-- The sweep ends it when the worker is hung or gone (pgq.maintain), dead on the last attempt
SELECT pgq.configure('rw_t', heartbeat_timeout => interval '1 hour');
SELECT lease AS t2_l2, (taken_over ->> 'error') || ' ' || (taken_over ->> 'worker_id') AS t2_note
  FROM pgq.claim(:w2, '{rw_t}', 1, now() + interval '9 seconds') \gset
SELECT is(:'t2_note'::text, 'timed out 11111111-1111-1111-1111-111111111111',
          'claimed again after a time-out: taken_over says so, and whose attempt it was');
SELECT is((SELECT attempt FROM pgq.jobs WHERE id = :t2), 2, 'claimed again: attempt 2 of 2');
SELECT is((SELECT swept FROM pgq.maintain(now() + interval '9.5 seconds')), 0, 'within their limits: the sweep leaves them');
SELECT is((SELECT swept FROM pgq.maintain(now() + interval '12.5 seconds')), 2,
          'past its limit (and job 1 past its own): pgq.maintain ends both, without any heartbeat');
SELECT is((SELECT row(status, attempt)::text FROM pgq.job_history WHERE id = :t2), '(failed,2)',
          'the last attempt timed out: dead');
SELECT is((SELECT state FROM pgq.heartbeat(:w2, ARRAY[:t2]::bigint[], ARRAY[:t2_l2]::bigint[], now() + interval '13 seconds')),
          'timed_out', 'the sweep timed it out first: the heartbeat of its worker answers timed_out');
SELECT is((SELECT errors -> -1 ->> 'decision' FROM pgq.job_history WHERE id = :t2), 'failed', 'decision failed');
SELECT is((SELECT status FROM pgq.jobs WHERE id = :t1), 'scheduled', 'job 1 timed out on attempt 1: retried');

-- Interruptions are bounded -----------------------------------------------------------------
SELECT pgq.configure('rw_i', max_attempts => 2, max_interruptions => 2);
SELECT pgq.enqueue('rw_i') AS i1 \gset
CREATE FUNCTION pg_temp.interrupt(at timestamptz) RETURNS text LANGUAGE sql AS $$
    SELECT c.status || ' ' || c.attempt
      FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{rw_i}', 1, at) AS j,
           pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[j.id], ARRAY[j.lease], '{interrupted}',
                        '[{"error": "WorkerShutdown", "message": "cut off"}]', at) AS c
$$;
SELECT is(pg_temp.interrupt(now()), 'retry 1', 'interrupted 1: not counted');
SELECT is(pg_temp.interrupt(now()), 'retry 1', 'interrupted 2: not counted');
SELECT is((SELECT attempt FROM pgq.jobs WHERE id = :i1), 0, 'no attempt used so far');
SELECT is(pg_temp.interrupt(now()), 'retry 1', 'interrupted 3 (past max_interruptions 2): counted, retried');
SELECT is((SELECT attempt FROM pgq.jobs WHERE id = :i1), 1, 'one attempt used');
SELECT is((SELECT errors -> -1 -> 'details' ->> 'message' FROM pgq.jobs WHERE id = :i1),
          'interrupted 3 times in a row (max_interruptions 2), so this interruption counts as a failed attempt: cut off',
          'its error says why it counted');
SELECT is(pg_temp.interrupt(now() + interval '1 minute'), 'failed 2', 'the next interruption counts too: dead on the last attempt');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :i1), 'failed', 'a job that hangs across restarts ends dead');

-- Snooze ---------------------------------------------------------------------------------------
SELECT pgq.configure('rw_s', max_attempts => 1, max_snoozes => 1);
SELECT pgq.enqueue('rw_s') AS s1 \gset
SELECT id AS s1, lease AS s1_l FROM pgq.claim(:w, '{rw_s}', 1, now()) \gset
SELECT throws_ok(format($$SELECT * FROM pgq.complete(%L, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], '{snoozed}')$$, :w, :s1, :s1_l),
    'PQ009', 'snooze at position 1 must be a number of seconds from 0 to 31536000 (details->''snooze''), got nothing',
    'snoozed needs details.snooze');
SELECT throws_ok(format($$SELECT * FROM pgq.complete(%L, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], '{snoozed}', '[{"snooze": -1}]')$$, :w, :s1, :s1_l),
    'PQ009', 'snooze at position 1 must be a number of seconds from 0 to 31536000 (details->''snooze''), got -1',
    'a negative snooze: PQ009 naming it');
SELECT is((SELECT row(status, attempt, retry_in_s)::text
             FROM pgq.complete(:w, ARRAY[:s1]::bigint[], ARRAY[:s1_l]::bigint[], '{snoozed}', '[{"snooze": 60}]', now())),
          '(snoozed,1,60)', 'snoozed: answered snoozed, due in 60 s on the server''s clock');
SELECT is((SELECT row(status, attempt, run_at)::text FROM pgq.jobs WHERE id = :s1),
          row('scheduled', 0, now() + interval '60 seconds')::text, 'scheduled, the attempt not counted');
SELECT is((SELECT (errors -> -1 ->> 'outcome') || ' ' || (errors -> -1 ->> 'decision') FROM pgq.jobs WHERE id = :s1),
          'snoozed snoozed', 'the snooze is counted in the error list');
SELECT id AS s1, lease AS s1_l FROM pgq.claim(:w, '{rw_s}', 1, now() + interval '61 seconds') \gset
SELECT is((SELECT row(status, attempt)::text
             FROM pgq.complete(:w, ARRAY[:s1]::bigint[], ARRAY[:s1_l]::bigint[], '{snoozed}', '[{"snooze": 0}]', now() + interval '62 seconds')),
          '(failed,1)', 'past max_snoozes the snooze counts as a failed attempt: dead on the last one');
SELECT is((SELECT errors -> -1 -> 'details' ->> 'message' FROM pgq.job_history WHERE id = :s1),
          'snoozed 2 times (max_snoozes 1), so this snooze counts as a failed attempt', 'and says why');

-- Fatal: dead at once --------------------------------------------------------------------------
SELECT pgq.configure('rw_f', max_attempts => 5);
SELECT pgq.enqueue('rw_f', '{"bad": true}') AS x1 \gset
SELECT id AS x1, lease AS x1_l FROM pgq.claim(:w, '{rw_f}', 1, now()) \gset
SELECT is((SELECT row(status, attempt, max_attempts)::text
             FROM pgq.complete(:w, ARRAY[:x1]::bigint[], ARRAY[:x1_l]::bigint[], '{fatal}',
                               '[{"error": "PayloadValidationError", "message": "payload does not match Ping: at: Field required"}]')),
          '(failed,1,5)', 'fatal: dead on the first attempt with 4 left');
SELECT is((SELECT (errors -> -1 ->> 'outcome') || ' ' || (errors -> -1 ->> 'decision') || ' ' || (errors -> -1 -> 'details' ->> 'error')
             FROM pgq.job_history WHERE id = :x1), 'fatal failed PayloadValidationError', 'noted fatal, with the error');
SELECT pgq.enqueue('rw_f') AS x2 \gset
SELECT id AS x2, lease AS x2_l FROM pgq.claim(:w, '{rw_f}', 1, now()) \gset
SELECT pgq.cancel(ARRAY[:x2]::bigint[]);
SELECT is((SELECT status FROM pgq.complete(:w, ARRAY[:x2]::bigint[], ARRAY[:x2_l]::bigint[], '{fatal}')), 'canceled',
          'fatal after a cancel request: canceled');

-- Taken over from a silent worker ------------------------------------------------------------
SELECT pgq.enqueue('rw_o') AS o1 \gset
SELECT is((SELECT taken_over FROM pgq.claim(:w, '{rw_o}', 1, now())), NULL::jsonb, 'a first claim: taken_over NULL');
SELECT is((SELECT (taken_over ->> 'worker_id') || ' ' || (taken_over ->> 'attempt') || ' ' || (taken_over ->> 'error')
             FROM pgq.claim(:w2, '{rw_o}', 1, now() + interval '31 seconds')),
          '11111111-1111-1111-1111-111111111111 1 heartbeat timeout',
          'claimed after its worker fell silent: taken_over names that worker and its attempt');

-- Silence made visible, before the heartbeat timeout ------------------------------------------
SELECT pgq.configure('rw_q', run_timeout => interval '1 minute');
SELECT pgq.enqueue('rw_q', run_at => now() - interval '1 minute') AS q1 \gset
SELECT id AS q1 FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{rw_q}', 1, now() - interval '20 seconds') \gset
SELECT is((SELECT row(silent_s, deadline_at)::text FROM pgq.job(:q1)),
          row(20::float8, now() + interval '40 seconds')::text,
          'pgq.job: a running job silent for 20 s says so, with its deadline');
SELECT is((SELECT row(state, stale, job_silent_s)::text FROM pgq.worker_status
            WHERE worker_id = '33333333-3333-3333-3333-333333333333'),
          '(unregistered,0,20)', 'pgq.worker_status: not stale yet (30 s timeout), silent for 20 s');
SELECT is((SELECT silent_s FROM pgq.list_jobs('rw_q', 'running')), 20::float8,
          'pgq.list_jobs: the running job, silent for 20 s');

SELECT * FROM finish();
ROLLBACK;
