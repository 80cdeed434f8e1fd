-- The whole lifecycle of pgq-thin jobs from psql.
--
-- Run it against a database where pgq-thin was just installed (job ids and leases below assume
-- fresh sequences):
--
--   psql -v ON_ERROR_STOP=1 -f docs/examples/lifecycle.sql
--
-- Its output, statement by statement, is docs/examples/lifecycle.out. The test suite runs this
-- script against a fresh install and compares (`make golden` rewrites the .out file).
--
-- Every step is one function call. Steps that must show "time passing" pass the optional
-- trailing `at` argument instead of sleeping. Expected errors are caught in DO blocks so the
-- script runs to the end under ON_ERROR_STOP.

\pset null '(null)'
\set worker_a '11111111-1111-1111-1111-111111111111'
\set worker_b '22222222-2222-2222-2222-222222222222'

-- 0. Listen: psql prints notifications after each command (any session can LISTEN).
LISTEN pgq_events;

-- 1. Enqueue one job (named arguments read naturally).
SELECT pgq.enqueue('send_email', '{"to": "a@example.com"}', priority => 5) AS id;

-- 2. Enqueue many in one statement; ids come back in input order. Payloads (and headers) are
--    one JSON array, element i for job i.
SELECT * FROM pgq.enqueue_many(
    ARRAY['send_email', 'send_email', 'resize_image'],
    '[{"to": "b@example.com"}, {"to": "c@example.com"}, {"path": "img/1.png"}]'
);

-- 3. A delayed job: due in one hour on the server's clock (or run_at => a timestamp).
SELECT pgq.enqueue('send_email', '{"to": "later@example.com"}',
                   delay => interval '1 hour') AS id;

-- 4. Dedupe: a key is unique among live jobs.
SELECT pgq.enqueue('daily_report', '{"day": "2026-11-29"}', dedupe_key => 'report:2026-11-29') AS id;
--    on_conflict => 'existing' returns the id of the live job that holds the key ...
SELECT pgq.enqueue('daily_report', '{"day": "2026-11-29"}', dedupe_key => 'report:2026-11-29',
                   on_conflict => 'existing') AS id;
--    ... the default 'raise' raises PQ007 and adds nothing.
DO $$
BEGIN
    PERFORM pgq.enqueue('daily_report', '{"day": "2026-11-29"}', dedupe_key => 'report:2026-11-29');
EXCEPTION WHEN SQLSTATE 'PQ007' THEN
    RAISE NOTICE 'caught %: %', SQLSTATE, SQLERRM;
END
$$;

SELECT id, entrypoint, status, priority, run_at > now() AS delayed, dedupe_key, attempt
  FROM pgq.jobs ORDER BY id;

-- The first enqueue of an entrypoint registered its policy row with the defaults.
SELECT entrypoint, concurrency_limit, max_attempts, backoff_base, backoff_max, heartbeat_timeout
  FROM pgq.entrypoints ORDER BY entrypoint;

-- 5. Policy: a longer backoff for send_email (so the retry below is easy to see), and
--    resize_image dies after a single attempt.
SELECT entrypoint, max_attempts, backoff_base, backoff_max
  FROM pgq.configure('send_email', backoff_base => interval '10 seconds');
SELECT entrypoint, max_attempts
  FROM pgq.configure('resize_image', max_attempts => 1);

-- A fixed "now" for the steps that move the clock (they pass it as the trailing `at`).
SELECT now() AS t0 \gset

-- 6. Claim: highest priority first, then earliest due, then id. The delayed job is not due.
--    The answer carries the policy a worker needs: the heartbeat timeout (also in seconds)
--    and whether a failure of this attempt is final. A request_id (new for every claim) lets a
--    worker send the claim again when the answer was lost: it answers the same jobs.
SELECT id, lease, entrypoint, payload, priority, attempt, max_attempts, heartbeat_timeout_s,
       last_attempt
  FROM pgq.claim(:'worker_a', ARRAY['send_email'], 2, :'t0',
                 request_id => '00000000-0000-0000-0000-00000000000a');
--    Sent again (its answer lost with the connection): the same jobs, nothing new claimed.
SELECT id, attempt
  FROM pgq.claim(:'worker_a', ARRAY['send_email'], 2, :'t0',
                 request_id => '00000000-0000-0000-0000-00000000000a');
SELECT lease AS lease1 FROM pgq.jobs WHERE id = 1 \gset
SELECT lease AS lease2 FROM pgq.jobs WHERE id = 2 \gset

-- 7. Heartbeat: one row per id. A wrong lease (or a job that is gone) answers 'lost'.
SELECT * FROM pgq.heartbeat(:'worker_a', ARRAY[1, 2, 3], ARRAY[:lease1, :lease2, 999], :'t0');

-- 8. Complete: the worker reports what happened (successful, failed, interrupted, canceled)
--    with details as one JSON array; SQL answers what it decided for each job. Successful:
--    the job leaves pgq.jobs for pgq.job_history with its details.
SELECT * FROM pgq.complete(:'worker_a', ARRAY[1], ARRAY[:lease1], ARRAY['successful'],
                           '[{"message_id": "m-1"}]', :'t0');
SELECT id, entrypoint, status, attempt, details FROM pgq.job_history WHERE id = 1;

-- 9. Fail into retry: queued again after backoff_base * 2^(attempt-1), capped at backoff_max,
--    with equal jitter: for attempt 1 and a 10 s base, between 5 s and 10 s after `at`.
SELECT id, status, attempt, lease FROM pgq.jobs WHERE id = 2;
SELECT id, status, attempt, max_attempts, retry_in_s BETWEEN 5 AND 10 AS retry_in_5_to_10s
  FROM pgq.complete(:'worker_a', ARRAY[2], ARRAY[:lease2], ARRAY['failed'],
                    '[{"error": "SMTP timeout"}]', :'t0');
SELECT id, status, attempt, lease,
       run_at - :'t0' BETWEEN interval '5 seconds' AND interval '10 seconds' AS backoff_5_to_10s,
       errors -> 0 -> 'details' AS last_error
  FROM pgq.jobs WHERE id = 2;

--    Not due yet: a claim at t0 finds job 3 (due now), not job 2.
SELECT id, attempt FROM pgq.claim(:'worker_a', ARRAY['send_email'], 1, :'t0');
SELECT lease AS lease3 FROM pgq.jobs WHERE id = 3 \gset

--    Eleven seconds later job 2 is due again: attempt 2, a new lease.
SELECT id, attempt, lease FROM pgq.claim(:'worker_a', ARRAY['send_email'], 1,
                                         :'t0'::timestamptz + interval '11 seconds');
SELECT lease AS lease2b FROM pgq.jobs WHERE id = 2 \gset

--    A handler may ask for its own delay: details->'retry_after' in seconds.
SELECT id, status, attempt, max_attempts, retry_in_s
  FROM pgq.complete(:'worker_a', ARRAY[2], ARRAY[:lease2b], ARRAY['failed'],
                    '[{"error": "rate limited", "retry_after": 60}]',
                    :'t0'::timestamptz + interval '12 seconds');
SELECT id, attempt, run_at - :'t0' AS due_after_t0, jsonb_array_length(errors) AS failures
  FROM pgq.jobs WHERE id = 2;

-- 10. Stale heartbeat: worker_a stops beating job 3. After heartbeat_timeout (30 s) the
--     ordinary claim path hands it to worker_b with a new lease and attempt + 1 ...
SELECT id, attempt, lease FROM pgq.claim(:'worker_b', ARRAY['send_email'], 1,
                                         :'t0'::timestamptz + interval '45 seconds');
--     ... and the old owner is fenced out: its heartbeat answers 'lost', its complete is ignored.
SELECT * FROM pgq.heartbeat(:'worker_a', ARRAY[3], ARRAY[:lease3]);
SELECT count(*) AS accepted
  FROM pgq.complete(:'worker_a', ARRAY[3], ARRAY[:lease3], ARRAY['successful']);
SELECT id, status, worker_id = :'worker_b' AS owned_by_b, attempt,
       errors -> 0 -> 'details' ->> 'error' AS recorded
  FROM pgq.jobs WHERE id = 3;

-- 11. Dead after max attempts: resize_image allows one attempt, so a failure is final.
SELECT id, attempt, max_attempts FROM pgq.claim(:'worker_a', ARRAY['resize_image']);
SELECT lease AS lease4 FROM pgq.jobs WHERE id = 4 \gset
SELECT id, status, attempt, max_attempts, retry_in_s
  FROM pgq.complete(:'worker_a', ARRAY[4], ARRAY[:lease4], ARRAY['failed'],
                    '[{"error": "corrupt image"}]');
SELECT id, entrypoint, attempt, details, jsonb_array_length(errors) AS failures
  FROM pgq.failed_jobs;

-- 12. Cancel a queued job: it goes to history as canceled at once.
SELECT pgq.enqueue('send_email', '{"to": "oops@example.com"}') AS oops \gset
SELECT * FROM pgq.cancel(ARRAY[:oops]);
SELECT id, status, attempt FROM pgq.job_history WHERE id = :oops;

-- 13. Cancel a running job: it is flagged, its worker gets {"kind": "cancel"} and sees
--     'cancel_requested' in its next heartbeat, then completes it as canceled.
SELECT lease AS lease3b FROM pgq.jobs WHERE id = 3 \gset
SELECT * FROM pgq.cancel(ARRAY[3]);
SELECT * FROM pgq.heartbeat(:'worker_b', ARRAY[3], ARRAY[:lease3b]);
SELECT id, status, attempt FROM pgq.complete(:'worker_b', ARRAY[3], ARRAY[:lease3b], ARRAY['canceled']);
SELECT id, status, attempt FROM pgq.job_history WHERE id = 3;

-- 14. Requeue dead jobs from pgq.failed_jobs: same id, attempt 0, errors kept.
SELECT * FROM pgq.requeue(ARRAY(SELECT id FROM pgq.failed_jobs WHERE entrypoint = 'resize_image'));
SELECT id, entrypoint, status, attempt, jsonb_array_length(errors) AS failures
  FROM pgq.jobs WHERE id = 4;

-- 15. The queue at a glance (the view uses the real clock).
SELECT entrypoint, queued, due, running, stale, concurrency_limit, max_attempts
  FROM pgq.queue_stats ORDER BY entrypoint;

-- 16. History as a whole.
SELECT id, entrypoint, status, attempt FROM pgq.job_history ORDER BY id;
