-- pgq.complete: successful / canceled to history, failed retried with capped jittered backoff or
-- dead, retry_after, status and argument errors, stale leases and zombies.
BEGIN;
SELECT plan(107);

-- successful -> history with details --------------------------------------------------------
SELECT pgq.enqueue('cp_ok', '{"p": 1}', priority => 3, dedupe_key => 'cp-ok', headers => '{"h": 1}') AS ok_id \gset
SELECT lease AS ok_lease FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_ok}', 1, now()) \gset
SELECT results_eq(
    format($$SELECT id FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                         '{successful}', '[{"result": 42}]', now() + interval '5 seconds')$$,
           :ok_id, :ok_lease),
    format('VALUES (%s::bigint)', :ok_id), 'successful: the id is accepted');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :ok_id), 'the job left pgq.jobs');
SELECT row_eq(format($$SELECT entrypoint, status, priority, attempt, payload, headers, dedupe_key, enqueued_at,
                              started_at, finished_at, worker_id, details, errors
                         FROM pgq.job_history WHERE id = %s$$, :ok_id),
              ROW('cp_ok'::text, 'successful'::text, 3, 1, '{"p": 1}'::jsonb, '{"h": 1}'::jsonb, 'cp-ok'::text, now(),
                  now(), now() + interval '5 seconds', '11111111-1111-1111-1111-111111111111'::uuid,
                  '{"result": 42}'::jsonb, '[]'::jsonb),
              'history row: the job, status successful, finished_at = at, details, no errors');

-- canceled -> history ---------------------------------------------------------------------
SELECT pgq.enqueue('cp_cxl') AS cx_id \gset
SELECT lease AS cx_lease FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_cxl}', 1, now()) \gset
SELECT is((SELECT count(*)::int FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:cx_id]::bigint[],
                                                  ARRAY[:cx_lease]::bigint[], '{canceled}')), 1, 'canceled: accepted');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :cx_id), 'canceled', 'in history as canceled');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :cx_id), 'and gone from pgq.jobs');

-- failed with attempts left: queued again after backoff -------------------------------------
SELECT pgq.configure('cp_retry', max_attempts => 5, backoff_base => interval '10 seconds',
                     backoff_max => interval '1 minute');
SELECT pgq.enqueue('cp_retry', '{"r": 1}') AS r_id \gset
-- attempt 1 fails at T1 = now() + 1 min: delay in [5 s, 10 s]
SELECT lease AS r_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_retry}', 1, now()) \gset
SELECT results_eq(
    format($$SELECT id FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                         '{failed}', '[{"error": "boom 1"}]', now() + interval '1 minute')$$,
           :r_id, :r_l),
    format('VALUES (%s::bigint)', :r_id), 'failed with attempts left: accepted');
SELECT row_eq(format('SELECT status, attempt, lease, worker_id, heartbeat_at, started_at FROM pgq.jobs WHERE id = %s', :r_id),
              ROW('scheduled'::text, 1, NULL::bigint, NULL::uuid, NULL::timestamptz, NULL::timestamptz),
              'back in the queue due after its backoff (scheduled), attempt kept, lease and owner cleared');
SELECT ok((SELECT run_at BETWEEN now() + interval '1 minute 5 seconds' AND now() + interval '1 minute 10 seconds'
             FROM pgq.jobs WHERE id = :r_id),
          'attempt 1: run_at = at + a delay between base/2 and base');
SELECT is((SELECT (errors -> 0 ->> 'run_at')::timestamptz FROM pgq.jobs WHERE id = :r_id),
          (SELECT run_at FROM pgq.jobs WHERE id = :r_id), 'the error entry records when the retry is due');
SELECT is((SELECT jsonb_agg(e - 'lease' - 'run_at') FROM pgq.jobs, jsonb_array_elements(errors) AS e WHERE id = :r_id),
          jsonb_build_array(jsonb_build_object('attempt', 1, 'at', now() + interval '1 minute',
                                               'worker_id', '11111111-1111-1111-1111-111111111111',
                                               'decision', 'retry',
                                               'details', '{"error": "boom 1"}'::jsonb)),
          'the error list records attempt, time, worker, decision and details');
SELECT is((SELECT count(*)::int FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_retry}', 1,
                                               now() + interval '1 minute 4 seconds')), 0,
          'not claimable before the backoff ends');

-- attempt 2 fails at T2 = now() + 1 h: delay in [10 s, 20 s]
SELECT lease AS r_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_retry}', 1, now() + interval '1 hour') \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:r_id]::bigint[], ARRAY[:r_l]::bigint[],
                    '{failed}', '[{"error": "boom 2"}]', now() + interval '1 hour');
SELECT ok((SELECT run_at BETWEEN now() + interval '1 hour 10 seconds' AND now() + interval '1 hour 20 seconds'
             FROM pgq.jobs WHERE id = :r_id), 'attempt 2: delay between base and 2 * base');
-- attempt 3 at T3 = now() + 2 h: delay in [20 s, 40 s]
SELECT lease AS r_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_retry}', 1, now() + interval '2 hours') \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:r_id]::bigint[], ARRAY[:r_l]::bigint[],
                    '{failed}', '[{"error": "boom 3"}]', now() + interval '2 hours');
SELECT ok((SELECT run_at BETWEEN now() + interval '2 hours 20 seconds' AND now() + interval '2 hours 40 seconds'
             FROM pgq.jobs WHERE id = :r_id), 'attempt 3: delay between 2 * base and 4 * base');
-- attempt 4 at T4 = now() + 3 h: base * 8 = 80 s, capped at 60 s: delay in [30 s, 60 s]
SELECT lease AS r_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_retry}', 1, now() + interval '3 hours') \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:r_id]::bigint[], ARRAY[:r_l]::bigint[],
                    '{failed}', '[{"error": "boom 4"}]', now() + interval '3 hours');
SELECT ok((SELECT run_at BETWEEN now() + interval '3 hours 30 seconds' AND now() + interval '3 hours 60 seconds'
             FROM pgq.jobs WHERE id = :r_id), 'attempt 4: capped at backoff_max, delay between max/2 and max');
SELECT results_eq(format($$SELECT e ->> 'attempt', e -> 'details' ->> 'error'
                             FROM jsonb_array_elements((SELECT errors FROM pgq.jobs WHERE id = %s)) e$$, :r_id),
                  $$VALUES ('1', 'boom 1'), ('2', 'boom 2'), ('3', 'boom 3'), ('4', 'boom 4')$$,
                  'the error list grows by one entry per failure, in order');
-- attempt 5 (the last) fails: dead
SELECT lease AS r_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_retry}', 1, now() + interval '4 hours') \gset
SELECT results_eq(
    format($$SELECT id FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                         '{failed}', '[{"error": "boom 5"}]', now() + interval '4 hours')$$,
           :r_id, :r_l),
    format('VALUES (%s::bigint)', :r_id), 'failed at the last attempt: accepted');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :r_id), 'a dead job leaves pgq.jobs');
SELECT row_eq(format('SELECT status, attempt, finished_at, details, jsonb_array_length(errors) FROM pgq.job_history WHERE id = %s', :r_id),
              ROW('failed'::text, 5, now() + interval '4 hours', '{"error": "boom 5"}'::jsonb, 5),
              'in history as failed with its last details and all five errors');
SELECT is((SELECT (errors -> -1) - 'lease' FROM pgq.job_history WHERE id = :r_id),
          jsonb_build_object('attempt', 5, 'at', now() + interval '4 hours', 'details', '{"error": "boom 5"}'::jsonb,
                             'worker_id', '11111111-1111-1111-1111-111111111111', 'decision', 'failed'),
          'the last error entry is the final failure');
SELECT ok((SELECT (errors -> -1 ->> 'lease')::bigint = lease FROM pgq.job_history WHERE id = :r_id),
          'and carries the lease of that attempt');
SELECT is((SELECT id FROM pgq.failed_jobs WHERE id = :r_id), :r_id::bigint, 'it shows in pgq.failed_jobs');

-- max_attempts 1: the first failure is final.
SELECT pgq.configure('cp_once', max_attempts => 1);
SELECT pgq.enqueue('cp_once') AS o_id \gset
SELECT lease AS o_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_once}', 1, now()) \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:o_id]::bigint[], ARRAY[:o_l]::bigint[], '{failed}');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :o_id), 'failed', 'max_attempts 1: dead after one failure');
SELECT is((SELECT errors -> 0 -> 'details' FROM pgq.job_history WHERE id = :o_id), 'null'::jsonb,
          'a failure without details is still recorded');

-- retry_after overrides the backoff exactly --------------------------------------------------
SELECT pgq.enqueue('cp_ra') AS ra_id \gset
SELECT lease AS ra_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_ra}', 1, now()) \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:ra_id]::bigint[], ARRAY[:ra_l]::bigint[],
                    '{failed}', '[{"retry_after": 90, "error": "rate limited"}]', now() + interval '1 minute');
SELECT is((SELECT run_at FROM pgq.jobs WHERE id = :ra_id), now() + interval '1 minute 90 seconds',
          'retry_after 90: run_at = at + 90 s exactly');
SELECT lease AS ra_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_ra}', 1, now() + interval '1 hour') \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:ra_id]::bigint[], ARRAY[:ra_l]::bigint[],
                    '{failed}', '[{"retry_after": 1.5}]', now() + interval '1 hour');
SELECT is((SELECT run_at FROM pgq.jobs WHERE id = :ra_id), now() + interval '1 hour 1.5 seconds',
          'retry_after may be fractional');
SELECT lease AS ra_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_ra}', 1, now() + interval '2 hours') \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:ra_id]::bigint[], ARRAY[:ra_l]::bigint[],
                    '{failed}', '[{"retry_after": 0}]', now() + interval '2 hours');
SELECT is((SELECT run_at FROM pgq.jobs WHERE id = :ra_id), now() + interval '2 hours', 'retry_after 0: due at once');

-- Large attempts and a large base do not overflow the backoff -------------------------------
SELECT pgq.configure('cp_big', max_attempts => 100, backoff_base => interval '1 hour', backoff_max => interval '2 hours');
SELECT pgq.enqueue('cp_big') AS big_id \gset
DO $$
DECLARE
    c pgq.claimed_job;
BEGIN
    FOR i IN 1..44 LOOP
        SELECT * INTO STRICT c FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_big}', 1, now() + i * interval '1 day');
        PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease], '{failed}',
                             jsonb_build_array('{"retry_after": 0}'::jsonb), now() + i * interval '1 day');
    END LOOP;
END
$$;
SELECT lease AS big_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_big}', 1, now() + interval '100 days') \gset
SELECT is((SELECT attempt FROM pgq.jobs WHERE id = :big_id), 45, 'attempt 45 running');
SELECT lives_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                             '{failed}', NULL, now() + interval '100 days')$$, :big_id, :big_l),
                'failing attempt 45 with a 1 hour base does not overflow');
SELECT ok((SELECT run_at BETWEEN now() + interval '100 days 1 hour' AND now() + interval '100 days 2 hours'
             FROM pgq.jobs WHERE id = :big_id), 'and the delay is capped at backoff_max');
SELECT pgq.configure('cp_days', max_attempts => 50, backoff_base => interval '1 day', backoff_max => interval '7 days');
SELECT pgq.enqueue('cp_days') AS d_id \gset
DO $$
DECLARE
    c pgq.claimed_job;
BEGIN
    FOR i IN 1..34 LOOP
        SELECT * INTO STRICT c FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_days}', 1, now() + i * interval '1 day');
        PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease], '{failed}',
                             jsonb_build_array('{"retry_after": 0}'::jsonb), now() + i * interval '1 day');
    END LOOP;
END
$$;
SELECT lease AS d_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_days}', 1, now() + interval '100 days') \gset
SELECT lives_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                             '{failed}', NULL, now() + interval '100 days')$$, :d_id, :d_l),
                'failing attempt 35 with a 1 day base does not overflow');
SELECT ok((SELECT run_at BETWEEN now() + interval '103 days 12 hours' AND now() + interval '107 days'
             FROM pgq.jobs WHERE id = :d_id), 'and the delay is capped at 7 days');

-- Errors change nothing ----------------------------------------------------------------------
SELECT pgq.enqueue('cp_err') AS e_id \gset
SELECT pgq.enqueue('cp_err') AS e_id2 \gset
CREATE TEMP TABLE ce AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_err}', 2, now());
SELECT lease AS e_l FROM ce WHERE id = :e_id \gset
SELECT lease AS e_l2 FROM ce WHERE id = :e_id2 \gset
CREATE TEMP TABLE before_err AS SELECT * FROM pgq.jobs WHERE entrypoint = 'cp_err';
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s, %s]::bigint[],
                                              ARRAY[%s, %s]::bigint[], '{successful,done}')$$, :e_id, :e_id2, :e_l, :e_l2),
    'PQ004', 'unknown outcome ''done'' at position 2: use successful, failed, interrupted, canceled, snoozed or fatal',
    'unknown status: PQ004 naming the status and its position');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], ARRAY[NULL]::text[])$$, :e_id, :e_l),
    'PQ004', 'unknown outcome NULL at position 1: use successful, failed, interrupted, canceled, snoozed or fatal', 'NULL status: PQ004');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], '{Successful}')$$, :e_id, :e_l),
    'PQ004', NULL, 'statuses are case-sensitive: PQ004');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], '{failed}', '[{"retry_after": "soon"}]')$$, :e_id, :e_l),
    'PQ009', 'retry_after at position 1 must be a number of seconds from 0 to 31536000, got "soon"',
    'retry_after not a number: PQ009');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], '{failed}', '[{"retry_after": -1}]')$$, :e_id, :e_l),
    'PQ009', NULL, 'negative retry_after: PQ009');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], '{failed}', '[{"retry_after": 31536001}]')$$, :e_id, :e_l),
    'PQ009', NULL, 'retry_after over a year: PQ009');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], '{failed}', '[{"retry_after": null}]')$$, :e_id, :e_l),
    'PQ009', NULL, 'retry_after JSON null: PQ009');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], '{successful,successful}')$$, :e_id, :e_l),
    'PQ003', 'outcomes has 2 elements but ids has 1', 'statuses longer than ids: PQ003');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], NULL)$$, :e_id, :e_l),
    'PQ009', NULL, 'NULL statuses: PQ009');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s]::bigint[], '{successful}', '[{}, {}]')$$, :e_id, :e_l),
    'PQ003', 'details has 2 elements but ids has 1', 'details of another length: PQ003');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                              ARRAY[%s, %s]::bigint[], '{successful}')$$, :e_id, :e_l, :e_l2),
    'PQ003', NULL, 'leases of another length: PQ003');
SELECT throws_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s, %s]::bigint[],
                                              ARRAY[%s, %s]::bigint[], '{successful,successful}')$$, :e_id, :e_id, :e_l, :e_l),
    'PQ009', NULL, 'duplicate ids: PQ009');
SELECT throws_ok(format($$SELECT pgq.complete(NULL, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], '{successful}')$$, :e_id, :e_l),
    'PQ009', 'worker_id must not be NULL', 'NULL worker_id: PQ009');
SELECT set_eq($$SELECT * FROM pgq.jobs WHERE entrypoint = 'cp_err'$$, $$SELECT * FROM before_err$$,
              'failed calls changed nothing: both jobs still running as they were');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.job_history WHERE id IN (:e_id, :e_id2)), 'and wrote no history');

-- Stale lease, wrong worker: ignored ---------------------------------------------------------
SELECT is((SELECT count(*)::int FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:e_id]::bigint[],
                                                  ARRAY[:e_l + 1000000]::bigint[], '{successful}')), 0,
          'a wrong lease: no id returned');
SELECT is((SELECT count(*)::int FROM pgq.complete('22222222-2222-2222-2222-222222222222', ARRAY[:e_id]::bigint[],
                                                  ARRAY[:e_l]::bigint[], '{failed}')), 0,
          'the right lease from another worker: no id returned');
SELECT is((SELECT count(*)::int FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[-5]::bigint[],
                                                  ARRAY[1]::bigint[], '{successful}')), 0, 'an unknown id: no id returned');
SELECT set_eq($$SELECT * FROM pgq.jobs WHERE entrypoint = 'cp_err'$$, $$SELECT * FROM before_err$$,
              'ignored completions changed nothing');
SELECT results_eq(
    format($$SELECT id FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s, %s, -5]::bigint[],
                                         ARRAY[%s, %s, 1]::bigint[], '{successful,successful,successful}')$$,
           :e_id, :e_id2, :e_l + 1000000, :e_l2),
    format('VALUES (%s::bigint)', :e_id2), 'in a mixed batch only the owned job is accepted');
SELECT is((SELECT status FROM pgq.jobs WHERE id = :e_id), 'running', 'the job with the wrong lease is still running');
SELECT is((SELECT count(*)::int FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:e_id2]::bigint[],
                                                  ARRAY[:e_l2]::bigint[], '{successful}')), 1,
          'completing a finished job again under its own lease: accepted again (idempotent)');

-- Zombie: after a stale re-claim the old lease cannot complete the new attempt -------------------
SELECT pgq.enqueue('cp_zombie') AS z \gset
SELECT lease AS zl1 FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_zombie}', 1, now()) \gset
SELECT lease AS zl2 FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cp_zombie}', 1, now() + interval '31 seconds') \gset
SELECT is((SELECT count(*)::int FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:z]::bigint[],
                                                  ARRAY[:zl1]::bigint[], '{successful}')), 0,
          'the zombie''s successful is ignored');
SELECT is((SELECT count(*)::int FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:z]::bigint[],
                                                  ARRAY[:zl1]::bigint[], '{failed}')), 0,
          'the zombie''s failed is ignored');
SELECT row_eq(format('SELECT status, lease, worker_id, attempt FROM pgq.jobs WHERE id = %s', :z),
              ROW('running'::text, :zl2::bigint, '22222222-2222-2222-2222-222222222222'::uuid, 2),
              'the new attempt is untouched');
SELECT is((SELECT count(*)::int FROM pgq.complete('22222222-2222-2222-2222-222222222222', ARRAY[:z]::bigint[],
                                                  ARRAY[:zl2]::bigint[], '{successful}')), 1,
          'the new owner completes it');
SELECT is((SELECT worker_id FROM pgq.job_history WHERE id = :z), '22222222-2222-2222-2222-222222222222'::uuid,
          'history names the new owner');

-- A batch with every status at once ---------------------------------------------------------
SELECT count(*) FROM (SELECT pgq.enqueue('cp_batch', jsonb_build_object('n', g)) FROM generate_series(1, 3) g) e;
CREATE TEMP TABLE cb AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_batch}', 3, now());
SELECT set_eq($$SELECT id FROM pgq.complete('11111111-1111-1111-1111-111111111111',
                                            (SELECT array_agg(id ORDER BY id) FROM cb),
                                            (SELECT array_agg(lease ORDER BY id) FROM cb),
                                            '{successful,failed,canceled}')$$,
              $$SELECT id FROM cb$$, 'a mixed batch: every id accepted');
SELECT results_eq($$SELECT coalesce(h.status, j.status) FROM cb
                      LEFT JOIN pgq.job_history h ON h.id = cb.id
                      LEFT JOIN pgq.jobs j ON j.id = cb.id ORDER BY cb.id$$,
                  ARRAY['successful', 'scheduled', 'canceled'], 'each status applied to its own job');

-- A failed attempt of a job flagged for cancellation is not retried.
SELECT pgq.enqueue('cp_cancel') AS cc \gset
SELECT lease AS ccl FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_cancel}', 1, now()) \gset
SELECT pgq.cancel(ARRAY[:cc]::bigint[]);
SELECT is((SELECT array_agg(r.id) FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:cc]::bigint[], ARRAY[:ccl]::bigint[],
                                                  '{failed}', jsonb_build_array('{"error": "interrupted"}'::jsonb)) r),
          ARRAY[:cc]::bigint[], 'a failed attempt of a flagged job is accepted');
SELECT row_eq(format('SELECT status, details FROM pgq.job_history WHERE id = %s', :cc),
              ROW('canceled'::text, '{"error": "interrupted"}'::jsonb), 'it ends as canceled with its details, no retry');

-- details that are not an object are kept as they are; retry_after is read from objects only.
SELECT pgq.enqueue('cp_str') AS cs \gset
SELECT lease AS csl FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_str}', 1, now()) \gset
SELECT lives_ok(format($$SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                             '{failed}', jsonb_build_array('"retry_after"'::jsonb))$$, :cs, :csl),
                'string details mentioning retry_after: an ordinary failure (retried with backoff)');

-- Idempotent: a repeated call (its first answer lost) is accepted again and changes nothing.
SELECT pgq.enqueue('cp_idem') AS ia \gset
SELECT pgq.enqueue('cp_idem') AS ib \gset
CREATE TEMP TABLE idem AS SELECT id, lease FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_idem}', 2, now());
SELECT lease AS ial FROM idem WHERE id = :ia \gset
SELECT lease AS ibl FROM idem WHERE id = :ib \gset
SELECT set_eq(format($$SELECT id FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s, %s]::bigint[],
                                                  ARRAY[%s, %s]::bigint[], '{successful,failed}')$$, :ia, :ib, :ial, :ibl),
              ARRAY[:ia, :ib]::bigint[], 'first call: both accepted (one done, one retried)');
CREATE TEMP TABLE idem_before AS
SELECT 'h' AS t, id, status, attempt, finished_at AS ts, errors FROM pgq.job_history WHERE id IN (:ia, :ib)
UNION ALL SELECT 'j', id, status, attempt, run_at, errors FROM pgq.jobs WHERE id IN (:ia, :ib);
SELECT set_eq(format($$SELECT id FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s, %s]::bigint[],
                                                  ARRAY[%s, %s]::bigint[], '{successful,failed}', at => now() + interval '1 minute')$$,
                     :ia, :ib, :ial, :ibl),
              ARRAY[:ia, :ib]::bigint[], 'the same call again: the same ids accepted');
SELECT set_eq($$SELECT 'h' AS t, id, status, attempt, finished_at, errors FROM pgq.job_history WHERE id IN (SELECT id FROM idem)
                UNION ALL SELECT 'j', id, status, attempt, run_at, errors FROM pgq.jobs WHERE id IN (SELECT id FROM idem)$$,
              $$SELECT * FROM idem_before$$, 'and nothing changed');
SELECT is((SELECT lease FROM pgq.job_history WHERE id = :ia), :ial::bigint, 'history keeps the lease of the finishing attempt');
SELECT is((SELECT count(*)::int FROM pgq.complete('22222222-2222-2222-2222-222222222222', ARRAY[:ia]::bigint[],
                                                 ARRAY[:ial]::bigint[], '{successful}')), 0,
          'another worker with that lease is not accepted');

-- A zombie whose job the claim path archived as dead (heartbeat timeout, attempts used up) is
-- not taken for a repeated call: the reaper records no lease.
SELECT pgq.configure('cp_reaped', max_attempts => 1);
SELECT pgq.enqueue('cp_reaped') AS rp \gset
SELECT lease AS rpl FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_reaped}', 1, now()) \gset
SELECT is((SELECT count(*)::int FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{cp_reaped}', 1,
                                              now() + interval '31 seconds')), 0,
          'the stale job with no attempts left is not claimed again ...');
SELECT is((SELECT count(*)::int FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:rp]::bigint[],
                                                 ARRAY[:rpl]::bigint[], '{successful}')), 0,
          '... and its zombie''s late complete is not accepted');

-- The answer: what SQL decided, per job, in input order ---------------------------------------
SELECT pgq.configure('cp_ans', max_attempts => 2, backoff_base => interval '10 seconds', backoff_max => interval '10 seconds');
SELECT pgq.enqueue('cp_ans') AS an1 \gset
SELECT pgq.enqueue('cp_ans') AS an2 \gset
SELECT pgq.enqueue('cp_ans') AS an3 \gset
CREATE TEMP TABLE an_c AS SELECT id, lease FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cp_ans}', 3, now());
SELECT results_eq(
    format($$SELECT id, status, attempt, max_attempts, run_at = now() + interval '2 minutes', retry_in_s
               FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s, %s, %s]::bigint[],
                                 (SELECT array_agg(lease ORDER BY array_position(ARRAY[%s, %s, %s]::bigint[], id)) FROM an_c),
                                 '{canceled,failed,successful}', '[null, {"retry_after": 120}, {"result": 1}]',
                                 now())$$, :an3, :an2, :an1, :an3, :an2, :an1),
    format($$VALUES (%s::bigint, 'canceled'::text, 1, 2, NULL::boolean, NULL::float8),
                    (%s, 'retry', 1, 2, true, 120::float8),
                    (%s, 'successful', 1, 2, NULL, NULL)$$, :an3, :an2, :an1),
    'complete answers id, status, attempt, max_attempts, run_at and retry_in_s per job, in input order');
SELECT lease AS an2l FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cp_ans}', 1, now() + interval '3 minutes') \gset
SELECT results_eq(
    format($$SELECT id, status, attempt, max_attempts, run_at, retry_in_s
               FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                 '{failed}', '[{"error": "again"}]', now() + interval '3 minutes')$$, :an2, :an2l),
    format($$VALUES (%s::bigint, 'failed'::text, 2, 2, NULL::timestamptz, NULL::float8)$$, :an2),
    'the last attempt failing: status failed (dead), no run_at');
SELECT results_eq(
    format($$SELECT id, status, attempt FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                                           ARRAY[%s]::bigint[], '{failed}', '[{"error": "again"}]')$$, :an2, :an2l),
    format($$VALUES (%s::bigint, 'failed'::text, 2)$$, :an2),
    'repeated (its answer lost): the same decision, from history');

-- interrupted: back to the queue at once, the attempt not counted, noted in the error list.
SELECT pgq.configure('cp_int', max_attempts => 1);
SELECT pgq.enqueue('cp_int') AS it \gset
SELECT lease AS itl FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cp_int}', 1, now()) \gset
SELECT results_eq(
    format($$SELECT status, attempt, max_attempts, run_at, retry_in_s
               FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                 '{interrupted}', '[{"error": "WorkerShutdown"}]', now() + interval '1 minute')$$, :it, :itl),
    $$VALUES ('retry'::text, 1, 1, now() + interval '1 minute', 0::float8)$$,
    'interrupted on its last attempt: retry at once (not dead)');
SELECT row_eq(format('SELECT status, attempt, run_at FROM pgq.jobs WHERE id = %s', :it),
              ROW('queued'::text, 0, now() + interval '1 minute'),
              'queued, due at once, its attempt not counted');
SELECT is((SELECT (errors -> -1) - 'at' - 'run_at' FROM pgq.jobs WHERE id = :it),
          jsonb_build_object('attempt', 1, 'lease', :itl::bigint, 'outcome', 'interrupted', 'details', '{"error": "WorkerShutdown"}'::jsonb,
                             'worker_id', '33333333-3333-3333-3333-333333333333', 'decision', 'retry'),
          'the error list notes the interrupted attempt');
SELECT results_eq(
    format($$SELECT status, attempt, retry_in_s FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                                                  ARRAY[%s]::bigint[], '{interrupted}', at => now() + interval '1 minute')$$, :it, :itl),
    $$VALUES ('retry'::text, 1, 0::float8)$$,
    'repeated: the same answer, from the error list');
SELECT lease AS itl2 FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cp_int}', 1, now() + interval '1 minute') \gset
SELECT pgq.cancel(ARRAY[:it]::bigint[]);
SELECT results_eq(
    format($$SELECT status, attempt FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                                      ARRAY[%s]::bigint[], '{interrupted}')$$, :it, :itl2),
    $$VALUES ('canceled'::text, 1)$$,
    'interrupted after a cancel request: canceled');
SELECT is((SELECT (errors -> -1) - 'at' FROM pgq.job_history WHERE id = :it),
          jsonb_build_object('attempt', 1, 'lease', :itl2::bigint, 'outcome', 'interrupted',
                             'worker_id', '33333333-3333-3333-3333-333333333333', 'decision', 'canceled',
                             'details', NULL),
          'an interrupted attempt that ends canceled is in the error list too');
SELECT row_eq(format('SELECT attempt, lease, worker_id FROM pgq.job_history WHERE id = %s', :it),
              ROW(0, :itl2::bigint, '33333333-3333-3333-3333-333333333333'::uuid),
              'and history does not count it (attempt 0), with the lease and worker that reported it');
SELECT results_eq(
    format($$SELECT status, attempt FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                                      ARRAY[%s]::bigint[], '{interrupted}')$$, :it, :itl2),
    $$VALUES ('canceled'::text, 1)$$,
    'repeated: the same answer (the attempt that ended), from history');

-- A failure after a cancel request ends canceled, and is in the error list like every failure.
SELECT pgq.enqueue('cp_int') AS fc \gset
SELECT lease AS fcl FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cp_int}', 1, now()) \gset
SELECT pgq.cancel(ARRAY[:fc]::bigint[]);
SELECT results_eq(
    format($$SELECT status FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                             ARRAY[%s]::bigint[], '{failed}', '[{"error": "late"}]')$$, :fc, :fcl),
    $$VALUES ('canceled'::text)$$, 'failed after a cancel request: canceled');
SELECT is((SELECT jsonb_build_array(jsonb_array_length(errors), errors -> -1 -> 'decision', errors -> -1 -> 'details')
             FROM pgq.job_history WHERE id = :fc),
          '[1, "canceled", {"error": "late"}]'::jsonb,
          'the failure that ended it canceled is in its error list');

-- A repeated complete answers only the worker that held the lease, and what was decided then.
SELECT pgq.enqueue('cp_rep') AS rp \gset
SELECT pgq.configure('cp_rep', max_attempts => 1);
SELECT lease AS rpl FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cp_rep}', 1, now()) \gset
SELECT results_eq(
    format($$SELECT status FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                             ARRAY[%s]::bigint[], '{failed}')$$, :rp, :rpl),
    $$VALUES ('failed'::text)$$, 'the last attempt fails: dead');
SELECT is((SELECT count(*)::int FROM pgq.requeue(ARRAY[:rp]::bigint[])), 1, 'requeued');
SELECT results_eq(
    format($$SELECT status, attempt FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                                      ARRAY[%s]::bigint[], '{failed}')$$, :rp, :rpl),
    $$VALUES ('failed'::text, 1)$$,
    'repeated after a requeue: the answer it had (failed), not retry');
SELECT is_empty(
    format($$SELECT * FROM pgq.complete('44444444-4444-4444-4444-444444444444', ARRAY[%s]::bigint[],
                                        ARRAY[%s]::bigint[], '{failed}')$$, :rp, :rpl),
    'another worker sending the same lease gets no answer');
SELECT row_eq(format('SELECT status, attempt, lease FROM pgq.jobs WHERE id = %s', :rp),
              ROW('queued'::text, 0, NULL::bigint), 'and the requeued job is untouched');

-- A repeated complete of a retry whose job was canceled since (it is in history now): the same
-- answer, from the history row's error list.
SELECT pgq.configure('cp_rep2', max_attempts => 3);
SELECT pgq.enqueue('cp_rep2') AS rq \gset
SELECT lease AS rql FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cp_rep2}', 1, now()) \gset
CREATE TEMP TABLE rq_first AS
SELECT status, attempt, run_at FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[:rq]::bigint[],
                                                 ARRAY[:rql]::bigint[], '{failed}', '[{"retry_after": 60}]');
SELECT is((SELECT count(*)::int FROM pgq.cancel(ARRAY[:rq]::bigint[])), 1, 'the retried job is canceled while it waits');
SELECT results_eq(
    format($$SELECT status, attempt, run_at FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                                              ARRAY[%s]::bigint[], '{failed}', '[{"retry_after": 60}]')$$, :rq, :rql),
    'SELECT status, attempt, run_at FROM rq_first',
    'repeated after the job was canceled: the same retry answer, with its run_at');
SELECT is((SELECT status FROM rq_first), 'retry', 'the first answer was a retry');

-- A cancel request on a job that then succeeds: it stays successful.
SELECT pgq.enqueue('cp_int') AS cs2 \gset
SELECT lease AS cs2l FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{cp_int}', 1, now()) \gset
SELECT pgq.cancel(ARRAY[:cs2]::bigint[]);
SELECT results_eq(
    format($$SELECT status FROM pgq.complete('33333333-3333-3333-3333-333333333333', ARRAY[%s]::bigint[],
                                             ARRAY[%s]::bigint[], '{successful}')$$, :cs2, :cs2l),
    $$VALUES ('successful'::text)$$, 'successful after a cancel request: successful (the work is done)');

-- details: one JSON array.
SELECT throws_ok($$SELECT pgq.complete('33333333-3333-3333-3333-333333333333', '{1}', '{1}', '{failed}', '{"error": "x"}')$$,
                 'PQ009', 'details must be a JSON array (element i for job i) or NULL, got object',
                 'details not a JSON array: PQ009');
SELECT throws_ok($$SELECT pgq.complete('33333333-3333-3333-3333-333333333333', '{1}', '{1}', '{failed}', '[1, 2]')$$,
                 'PQ003', 'details has 2 elements but ids has 1', 'details of another length: PQ003');

-- Ring storage ----------------------------------------------------------------------------
-- A retry with a delay moves to jobs_scheduled (slot 4, no ready number) until it is due.
SELECT pgq.enqueue('cp_ring', dedupe_key => 'cp-ring-later') AS later \gset
SELECT lease AS later_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_ring}', 1, now()) \gset
SELECT results_eq(
    format($$SELECT status, run_at FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                                     ARRAY[%s]::bigint[], '{failed}', '[{"retry_after": 30}]', now())$$,
           :later, :later_l),
    $$VALUES ('retry'::text, now() + interval '30 seconds')$$, 'a delayed retry is answered as before');
SELECT row_eq(format('SELECT tableoid::regclass::text, slot, status, ready_seq, run_at, lease FROM pgq.jobs WHERE id = %s', :later),
              ROW('pgq.jobs_scheduled'::text, 4::smallint, 'scheduled'::text, NULL::bigint, now() + interval '30 seconds', NULL::bigint),
              'and lands in jobs_scheduled: slot 4, scheduled, no ready number, due at at + delay');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE id = :later), 1, 'one row (moved, not copied)');
SELECT is((SELECT job_id FROM pgq.live_keys WHERE dedupe_key = 'cp-ring-later'), :later::bigint, 'a retried job keeps its key');
SELECT results_eq(
    format($$SELECT status FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                             ARRAY[%s]::bigint[], '{failed}', '[{"retry_after": 30}]', now())$$,
           :later, :later_l),
    $$VALUES ('retry'::text)$$, 'repeated: the same answer');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE id = :later AND status = 'scheduled'), 1, 'and nothing moved again');

-- A retry without a delay stays in its slot, queued, with a new ready number (behind the jobs
-- that became runnable meanwhile).
SELECT pgq.enqueue('cp_ring2') AS now_ \gset
SELECT lease AS now_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_ring2}', 1, now()) \gset
SELECT slot AS now_slot, ready_seq AS now_seq FROM pgq.jobs WHERE id = :now_ \gset
SELECT pgq.enqueue('cp_ring2') AS after_ \gset
SELECT results_eq(
    format($$SELECT status, run_at FROM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[],
                                                     ARRAY[%s]::bigint[], '{failed}', '[{"retry_after": 0}]', now())$$,
           :now_, :now_l),
    $$VALUES ('retry'::text, now())$$, 'a retry without delay is answered as before');
SELECT row_eq(format('SELECT slot, status, lease FROM pgq.jobs WHERE id = %s', :now_),
              ROW(:now_slot::smallint, 'queued'::text, NULL::bigint), 'it stays in its slot, queued');
SELECT ok((SELECT ready_seq FROM pgq.jobs WHERE id = :now_) > (SELECT ready_seq FROM pgq.jobs WHERE id = :after_),
          'with a new ready number, behind the job enqueued after its claim');

-- Dedupe keys: freed when the job finishes (the key of the successful job above), and only the
-- key row the finished job holds.
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.live_keys WHERE dedupe_key = 'cp-ok'), 'a successful job''s key left pgq.live_keys');
SELECT pgq.enqueue('cp_ring3', dedupe_key => 'cp-ring-other') AS other \gset
SELECT lease AS other_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{cp_ring3}', 1, now()) \gset
UPDATE pgq.live_keys SET job_id = -1 WHERE dedupe_key = 'cp-ring-other';
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:other]::bigint[], ARRAY[:other_l]::bigint[], '{successful}');
SELECT is((SELECT job_id FROM pgq.live_keys WHERE dedupe_key = 'cp-ring-other'), -1::bigint,
          'a key row held by another job id stays');

-- Equal jitter: 50 first failures with a 100 s base retry between 50 and 100 s later, never
-- the whole cap, and not all at once.
SELECT pgq.configure('cp_jit', backoff_base => interval '100 seconds', backoff_max => interval '1 hour');
SELECT count(*) FROM pgq.enqueue_many(array_fill('cp_jit'::text, ARRAY[50]));
CREATE TEMP TABLE jit AS
SELECT r.retry_in_s
  FROM (SELECT array_agg(id) AS ids, array_agg(lease) AS leases
          FROM pgq.claim('55555555-5555-5555-5555-555555555555', '{cp_jit}', 50, now())) AS c,
       pgq.complete('55555555-5555-5555-5555-555555555555', c.ids, c.leases, array_fill('failed'::text, ARRAY[50]),
                    NULL, now()) AS r;
SELECT results_eq('SELECT count(*)::int, bool_and(retry_in_s >= 50 AND retry_in_s < 100), count(DISTINCT retry_in_s) > 40 FROM jit',
                  $$VALUES (50, true, true)$$,
                  'equal jitter: every delay in [base/2, base), spread out');

SELECT * FROM finish();
ROLLBACK;
