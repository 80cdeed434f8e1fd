-- pgq.claim(worker_id, entrypoints, batch_size, at, request_id)
-- Contract: claims up to batch_size runnable jobs of the given entrypoints, highest priority
--   first, then earliest due, then enqueue order. Runnable: queued with run_at <= at, or running
--   with a heartbeat older than the entrypoint's heartbeat_timeout (stale: its worker is gone).
--   Each claimed job gets status running, heartbeat = at, this worker, a new lease and attempt + 1
--   (a re-claim counts as an attempt). A stale job whose attempts are used up goes to history as
--   failed, and a stale job flagged for cancellation as canceled, instead of being claimed.
--   An entrypoint's concurrency_limit holds across all workers: one claimer at a time takes the
--   entrypoint's policy row (SKIP LOCKED: the others skip that entrypoint for this call). It also
--   bounds stale re-claims: they must fit beside the live running jobs, so limit 0 (paused)
--   claims nothing at all. An entrypoint paused with pgq.pause is skipped entirely (no queued
--   job, no stale re-claim) until pgq.resume.
--   at NULL means now(); tests pass a time to move the clock.
--   request_id (optional, chosen by the worker, new for every claim): a claim sent again with
--   the same request_id by the same worker (its answer was lost with the connection) answers
--   the jobs the first one claimed that this worker still runs under those leases (heartbeat
--   refreshed), and claims nothing new. A lost answer costs a round trip, not a heartbeat
--   timeout.
--   Jobs not due yet are 'scheduled' (outside the claim index, so a claim never walks them);
--   the claim first promotes the scheduled jobs of its entrypoints that are due at `at` to
--   'queued' (at most 1000 per call, earliest first; SKIP LOCKED), a cheap probe of their own
--   index when none is due.
--   Each row carries the entrypoint's policy as the worker needs it: max_attempts,
--   heartbeat_timeout (also in seconds, heartbeat_timeout_s: heartbeat well within it) and
--   last_attempt (a failure of this attempt makes the job dead).
-- Locking: FOR UPDATE SKIP LOCKED on candidate jobs and on limited entrypoints' policy rows;
--   never waits for another claimer. Must run in READ COMMITTED so each step sees the last commit.
-- Errors: PQ001 bad entrypoints, PQ002 batch_size outside 1..10000, PQ009 NULL worker_id,
--   PQ010 not READ COMMITTED.
CREATE OR REPLACE FUNCTION pgq.claim(
    worker_id    uuid,
    entrypoints  text[],
    batch_size   int         DEFAULT 1,
    at           timestamptz DEFAULT NULL,
    request_id   uuid        DEFAULT NULL
)
RETURNS SETOF pgq.claimed_job
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_now     timestamptz := coalesce(claim.at, now());
    v_limited text[];
    v_ids     bigint[];
BEGIN
    IF array_ndims(claim.entrypoints) > 1 OR claim.at < timestamptz '1970-01-01 00:00:00+00' OR claim.at >= timestamptz '9000-01-01 00:00:00+00' THEN
        PERFORM pgq._check_dims(claim.entrypoints, 'entrypoints'), pgq._check_time(claim.at, 'at');
    END IF;
    IF claim.worker_id IS NULL THEN
        RAISE EXCEPTION 'worker_id must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF coalesce(cardinality(claim.entrypoints), 0) = 0
       OR array_position(claim.entrypoints, NULL) IS NOT NULL
       OR array_position(claim.entrypoints, '') IS NOT NULL THEN
        RAISE EXCEPTION 'entrypoints must be a non-empty array of non-empty names, got %',
            coalesce(claim.entrypoints::text, 'NULL')
            USING ERRCODE = 'PQ001';
    END IF;
    IF claim.batch_size IS NULL OR claim.batch_size NOT BETWEEN 1 AND 10000 THEN
        RAISE EXCEPTION 'batch_size must be between 1 and 10000, got %', coalesce(claim.batch_size::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'pgq.claim needs READ COMMITTED isolation, the transaction is %',
            current_setting('transaction_isolation')
            USING ERRCODE = 'PQ010';
    END IF;

    -- The same request again: its answer was lost. Answer the jobs it claimed, still ours.
    IF claim.request_id IS NOT NULL THEN
        RETURN QUERY
        WITH again AS (
            UPDATE pgq.jobs j
               SET heartbeat_at = greatest(j.heartbeat_at, v_now)
              FROM pgq.entrypoints c
             WHERE j.entrypoint = ANY (claim.entrypoints)
               AND j.claim_request = claim.request_id
               AND j.status = 'running'
               AND j.worker_id = claim.worker_id
               AND c.entrypoint = j.entrypoint
            RETURNING j.id, j.lease, j.entrypoint, j.payload, j.headers, j.priority, j.attempt,
                      j.enqueued_at, j.run_at, j.dedupe_key, c.max_attempts, c.heartbeat_timeout,
                      extract(epoch FROM c.heartbeat_timeout)::float8, j.attempt >= c.max_attempts
        )
        SELECT a.* FROM again a ORDER BY a.priority DESC, a.run_at, a.id;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;

    -- Due scheduled jobs become queued (the trigger tells the other workers).
    UPDATE pgq.jobs j
       SET status = 'queued'
     WHERE j.id IN (SELECT s.id
                      FROM pgq.jobs s
                     WHERE s.entrypoint = ANY (claim.entrypoints)
                       AND s.status = 'scheduled'
                       AND s.run_at <= v_now
                     ORDER BY s.run_at
                     LIMIT 1000
                       FOR UPDATE SKIP LOCKED)
       AND j.status = 'scheduled';

    -- Limited entrypoints: one claimer at a time per entrypoint. The lock is held to commit.
    SELECT array_agg(c.entrypoint) INTO v_limited
      FROM (SELECT e.entrypoint
              FROM pgq.entrypoints e
             WHERE e.entrypoint = ANY (claim.entrypoints)
               AND e.concurrency_limit IS NOT NULL
               AND e.paused_at IS NULL
             ORDER BY e.entrypoint
               FOR UPDATE SKIP LOCKED) AS c;

    -- Stale jobs that may not run again leave for history.
    PERFORM pgq._archive(array_agg(s.id),
                         array_agg(CASE WHEN s.cancel_requested THEN 'canceled' ELSE 'failed' END),
                         array_agg(jsonb_build_object('error', 'heartbeat timeout',
                                                      'worker_id', s.worker_id,
                                                      'heartbeat_at', s.heartbeat_at)),
                         v_now)
       FROM (SELECT j.id, j.cancel_requested, j.worker_id, j.heartbeat_at
               FROM pgq.entrypoints c
               JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running'
              WHERE c.entrypoint = ANY (claim.entrypoints)
                AND j.heartbeat_at < v_now - c.heartbeat_timeout
                AND (j.attempt >= c.max_attempts OR j.cancel_requested)
                FOR UPDATE OF j SKIP LOCKED) AS s
     HAVING count(*) > 0;

    -- Lock the jobs to take. (Their ids go to an array: the UPDATE below then finds them by
    -- primary key whatever the planner guesses about the LIMITs.)
    WITH eps AS (
        SELECT c.entrypoint, c.heartbeat_timeout, c.max_attempts,
               CASE WHEN c.concurrency_limit IS NULL THEN claim.batch_size
                    WHEN c.entrypoint = ANY (v_limited) THEN
                         greatest(0, least(claim.batch_size,
                                           c.concurrency_limit - (SELECT count(*)
                                                                    FROM pgq.jobs r
                                                                   WHERE r.entrypoint = c.entrypoint
                                                                     AND r.status = 'running')))
                    ELSE 0 END AS quota,
               -- Re-claiming a stale job leaves the running count as it is, but it must still fit
               -- beside the live (non-stale) running jobs: a paused entrypoint re-claims nothing.
               CASE WHEN c.concurrency_limit IS NULL THEN claim.batch_size
                    WHEN c.entrypoint = ANY (v_limited) THEN
                         greatest(0, least(claim.batch_size,
                                           c.concurrency_limit - (SELECT count(*)
                                                                    FROM pgq.jobs r
                                                                   WHERE r.entrypoint = c.entrypoint
                                                                     AND r.status = 'running'
                                                                     AND r.heartbeat_at >= v_now - c.heartbeat_timeout)))
                    ELSE 0 END AS stale_quota
          FROM pgq.entrypoints c
         WHERE c.entrypoint = ANY (claim.entrypoints)
           AND c.paused_at IS NULL
    ), candidates AS (
        SELECT q.id, q.priority, q.run_at
          FROM eps
         CROSS JOIN LATERAL (
               SELECT j.id, j.priority, j.run_at
                 FROM pgq.jobs j
                WHERE j.entrypoint = eps.entrypoint
                  AND j.status = 'queued'
                  AND j.run_at <= v_now
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT eps.quota
                  FOR UPDATE SKIP LOCKED) AS q
        UNION ALL
        SELECT s.id, s.priority, s.run_at
          FROM eps
         CROSS JOIN LATERAL (
               SELECT j.id, j.priority, j.run_at
                 FROM pgq.jobs j
                WHERE j.entrypoint = eps.entrypoint
                  AND j.status = 'running'
                  AND j.heartbeat_at < v_now - eps.heartbeat_timeout
                  AND j.attempt < eps.max_attempts
                  AND NOT j.cancel_requested
                ORDER BY j.priority DESC, j.run_at, j.id
                LIMIT eps.stale_quota
                  FOR UPDATE SKIP LOCKED) AS s
    )
    SELECT array_agg(p.id) INTO v_ids
      FROM (SELECT c.id
              FROM candidates c
             ORDER BY c.priority DESC, c.run_at, c.id
             LIMIT claim.batch_size) AS p;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    RETURN QUERY
    WITH claimed AS (
        UPDATE pgq.jobs j
           SET status = 'running',
               lease = nextval('pgq.lease_seq'),
               worker_id = claim.worker_id,
               started_at = v_now,
               heartbeat_at = v_now,
               claim_request = claim.request_id,
               attempt = j.attempt + 1,
               -- A re-claimed stale job notes the timeout; no lease in the entry: a lease in
               -- the error list means that attempt's result was applied (see pgq.complete).
               errors = CASE WHEN j.status = 'running'
                             THEN j.errors || jsonb_build_array(jsonb_build_object(
                                      'attempt', j.attempt, 'at', v_now,
                                      'details', jsonb_build_object('error', 'heartbeat timeout',
                                                                    'worker_id', j.worker_id,
                                                                    'heartbeat_at', j.heartbeat_at)))
                             ELSE j.errors END
          FROM pgq.entrypoints c
         WHERE j.id = ANY (v_ids)
           AND c.entrypoint = j.entrypoint
        RETURNING j.id, j.lease, j.entrypoint, j.payload, j.headers, j.priority, j.attempt,
                  j.enqueued_at, j.run_at, j.dedupe_key, c.max_attempts, c.heartbeat_timeout,
                  extract(epoch FROM c.heartbeat_timeout)::float8, j.attempt >= c.max_attempts
    )
    SELECT c.* FROM claimed c ORDER BY c.priority DESC, c.run_at, c.id;
END
$$;
COMMENT ON FUNCTION pgq.claim(uuid, text[], int, timestamptz, uuid) IS
    'Claims up to batch_size runnable jobs (queued and due, or running with a stale heartbeat): priority desc, then due time, then id. SKIP LOCKED; respects concurrency limits; each claim gets a new lease. A claim re-sent with the same request_id answers the same jobs.';
