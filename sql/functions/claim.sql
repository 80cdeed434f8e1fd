-- pgq.claim(worker_id, entrypoints, batch_size, at, request_id)
-- Contract: claims up to batch_size runnable jobs of the given entrypoints, highest priority
--   first, then in ready order: the order in which jobs became runnable (enqueue order for jobs
--   due at once; a delayed or retried job joins when it is due; a released or timed-out job
--   goes to the back of its lane). Each lane (entrypoint, priority) is read from its cursor on
--   (pgq._lane_cursor), so row versions of jobs claimed or finished before are never walked
--   again, however long a transaction holds the vacuum horizon (docs/decisions/0006).
--   Each claimed job gets status running, heartbeat = at, this worker, a new lease and
--   attempt + 1.
--   Stale jobs (running with a heartbeat older than the entrypoint's heartbeat_timeout: their
--   worker is gone) are swept first, at most once a second of `at` across all claimers
--   (pgq._sweep, every entrypoint): queued again with the timeout in their error list (and then
--   claimed like any queued job, a new attempt), or to history as failed when their attempts
--   are used up, as canceled when cancellation was requested. (The ring's rotation and
--   truncation are pgq.maintain's, never a claim's: a TRUNCATE's lock would last as long as the
--   claim's transaction.)
--   An entrypoint's concurrency_limit holds across all workers: one claimer at a time takes the
--   entrypoint's policy row (SKIP LOCKED: the others skip that entrypoint for this call), and
--   claims only what fits beside its running jobs, so limit 0 claims nothing. An entrypoint
--   with a key_concurrency_limit is locked the same way; when the claim holds one, its jobs
--   are chosen by pgq._claim_keyed (group keys in turn, at most key_concurrency_limit running
--   jobs per key; the other entrypoints of the call as below). An entrypoint with a
--   rate_limit is locked the same way and takes at most rate_limit minus the starts of its
--   window (pgq._quota; per group key with rate_per_key, through pgq._claim_keyed); each claim
--   records its starts in pgq.rate_starts (one row per budget it took from), so no window of
--   rate_period ever holds more than rate_limit starts (pgq.next_run_at tells a worker when the
--   next one is allowed). An entrypoint
--   paused with pgq.pause is skipped entirely until pgq.resume.
--   at NULL means now(); tests pass a time to move the clock.
--   request_id (optional, chosen by the worker, new for every claim): a claim sent again with
--   the same request_id by the same worker (its answer was lost with the connection) answers
--   the jobs the first one claimed that this worker still runs under those leases (heartbeat
--   refreshed; priority first, then ready order, as a claim answers), and claims nothing new;
--   when none of them is still running under it (finished, released, swept or claimed again
--   meanwhile), it is an ordinary claim. A lost answer costs a round trip, not a heartbeat
--   timeout. A job carried to another slot of the ring while the replay waited for it
--   (pgq.maintain) is found again by a second look.
--   Jobs not due yet are 'scheduled' (in their own partition, outside the claim's way); the
--   claim first promotes the scheduled jobs of its entrypoints that are due at `at` (at most
--   1000 per call, earliest first; pgq._promote), a cheap index probe when none is due.
--   Each row carries the entrypoint's policy as the worker needs it: max_attempts,
--   heartbeat_timeout (also in seconds, heartbeat_timeout_s: heartbeat well within it) and
--   last_attempt (a failure of this attempt makes the job dead); the attempt's time limit in
--   seconds, run_timeout_s (the job's own timeout, else the entrypoint's run_timeout; NULL: none;
--   the claim sets deadline_at = at + that limit, and pgq._time_out ends the attempt past it);
--   and taken_over, for a job whose previous attempt SQL ended: swept because its worker fell
--   silent ({worker_id, heartbeat_at (its last sign of life), attempt, swept_at, error
--   'heartbeat timeout'}) or timed out ({worker_id, attempt, swept_at, error 'timed out',
--   message, started_at, deadline_at, timeout_s}); else NULL.
-- Locking: FOR UPDATE SKIP LOCKED on candidate jobs and on limited entrypoints' policy rows;
--   never waits for another claimer. A replayed request locks its own running jobs in id
--   order (it waits for a call holding one of them, as heartbeat does). Must run in READ
--   COMMITTED so each step sees the last commit.
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
-- Partitions emptied by TRUNCATE would otherwise get sequential scans in generic plans made
-- while they were empty (docs/decisions/0006).
SET enable_seqscan = off
-- No bitmap scans: planned without statistics, the UPDATE by ids read each partition through a
-- bitmap of its id index (10 jobs of 10 keys: 10 heap pages visited through the bitmap, 9,000
-- instructions per job more than analyzed), and the key walk's step (pgq._keyed_candidates)
-- through a bitmap of the lane's whole ready index, the key a filter, instead of one probe of
-- jobs_key_idx. Every statement of a claim finds its rows by index probes.
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_now     timestamptz := coalesce(claim.at, now());
    v_limited text[];
    v_keyed   boolean;
    v_rated   boolean;
    v_ids     bigint[];
    v_found   bigint[];
    v_now_ms  bigint;
    v_look   int;
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_queued  constant text := 'queued';
    c_running constant text := 'running';
    c_whole   constant bigint := -9223372036854775808;  -- pgq.rate_starts.key_hash: no key
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
    -- (A read first: the UPDATE would fire the update trigger even when it finds nothing, as
    -- it does for every new request.) Then the jobs are locked by id, in id order, looking
    -- twice: a replay never falls through to a new claim while its own job is being carried.
    IF claim.request_id IS NOT NULL THEN
        SELECT array_agg(j.id) INTO v_found
          FROM pgq.jobs j
         WHERE j.entrypoint = ANY (claim.entrypoints)
           AND j.claim_request = claim.request_id
           AND j.status = 'running' AND j.slot <> 4
           AND j.worker_id = claim.worker_id;
    END IF;
    IF v_found IS NOT NULL THEN
        v_ids := '{}';
        FOR v_look IN 1..2 LOOP  -- look twice: docs/architecture.md#look-twice
            v_ids := v_ids || ARRAY(SELECT j.id
                                      FROM pgq.jobs j
                                     WHERE j.id = ANY (v_found)
                                       AND j.id <> ALL (v_ids)
                                       AND j.claim_request = claim.request_id
                                       AND j.status = c_running AND j.slot <> 4
                                       AND j.worker_id = claim.worker_id
                                     ORDER BY j.id
                                       FOR UPDATE);
            EXIT WHEN cardinality(v_ids) = cardinality(v_found);
        END LOOP;
        -- None of them still runs under this request (finished, released, swept or claimed
        -- again meanwhile): an ordinary claim below.
        IF cardinality(v_ids) > 0 THEN
            RETURN QUERY
            WITH again AS (
                UPDATE pgq.jobs j
                   SET heartbeat_at = greatest(j.heartbeat_at, v_now)
                  FROM pgq.entrypoints c
                 WHERE j.id = ANY (v_ids)
                   AND j.status = c_running AND j.slot <> 4
                   AND c.entrypoint = j.entrypoint
                RETURNING j.id, j.lease, j.entrypoint, j.payload, j.headers, j.priority, j.attempt,
                          j.enqueued_at, j.run_at, j.dedupe_key, c.max_attempts, c.heartbeat_timeout,
                          extract(epoch FROM c.heartbeat_timeout)::float8 AS timeout_s,
                          j.attempt >= c.max_attempts AS last_attempt, j.ready_seq,
                          extract(epoch FROM coalesce(j.timeout, c.run_timeout))::float8 AS run_timeout_s,
                          CASE WHEN j.attempt > 1 AND j.errors -> -1 -> 'details' ->> 'error' IN ('heartbeat timeout', 'timed out')
                               THEN (j.errors -> -1 -> 'details') || jsonb_build_object('attempt', j.errors -> -1 -> 'attempt',
                                                                                        'swept_at', j.errors -> -1 -> 'at')
                                    || jsonb_strip_nulls(jsonb_build_object('worker_id', j.errors -> -1 -> 'worker_id'))
                          END AS taken_over
            )
            SELECT a.id, a.lease, a.entrypoint, a.payload, a.headers, a.priority, a.attempt,
                   a.enqueued_at, a.run_at, a.dedupe_key, a.max_attempts, a.heartbeat_timeout,
                   a.timeout_s, a.last_attempt, a.run_timeout_s, a.taken_over
              FROM again a
             ORDER BY a.priority DESC, a.ready_seq;
            RETURN;
        END IF;
    END IF;

    -- Stale jobs, at most once a second of the claim clock (either way: tests move it back).
    v_now_ms := (extract(epoch FROM v_now) * 1000)::bigint;
    IF abs(v_now_ms - (SELECT s.last_value FROM pgq.swept_at s)) >= 1000 THEN
        PERFORM setval('pgq.swept_at', greatest(v_now_ms, 0));
        PERFORM pgq._sweep(NULL, v_now);
    END IF;
    -- Due scheduled jobs become queued (the insert trigger tells the other workers). A probe
    -- first (pgq._promote's own read, without its locks): the call costs more than the probe.
    IF EXISTS (SELECT 1 FROM pgq.jobs j
                WHERE j.entrypoint = ANY (claim.entrypoints)
                  AND j.status = 'scheduled' AND j.slot = 4
                  AND j.run_at <= v_now) THEN
        PERFORM pgq._promote(claim.entrypoints, v_now, 1000);
    END IF;

    -- Limited entrypoints: one claimer at a time per entrypoint. The lock is held to commit.
    SELECT array_agg(c.entrypoint), bool_or(c.keyed), bool_or(c.rated) INTO v_limited, v_keyed, v_rated
      FROM (SELECT e.entrypoint,
                   e.key_concurrency_limit IS NOT NULL OR (e.rate_per_key AND e.rate_limit IS NOT NULL) AS keyed,
                   e.rate_limit IS NOT NULL AS rated
              FROM pgq.entrypoints e
             WHERE e.entrypoint = ANY (claim.entrypoints)
               AND (e.concurrency_limit IS NOT NULL OR e.key_concurrency_limit IS NOT NULL OR e.rate_limit IS NOT NULL)
               AND e.paused_at IS NULL
             ORDER BY e.entrypoint
               FOR UPDATE SKIP LOCKED) AS c;
    IF v_keyed THEN
        -- Per-key limits and fair share (a key-limited or key-rated entrypoint is locked by this claim).
        v_ids := pgq._claim_keyed(claim.entrypoints, v_limited, claim.batch_size, v_now);
    ELSE  -- (the statement below, not indented again: it is the claim of every other call)
    -- Lock the jobs to take: per lane from its cursor on (slot <> 4: queued jobs are in the
    -- ring, jobs_slot_check; the planner leaves jobs_scheduled out), then by priority and ready order
    -- within each entrypoint's quota. (The ids go to an array: the UPDATE below finds them by
    -- id whatever the planner guesses about the LIMITs.)
    WITH eps AS MATERIALIZED (  -- (each quota computed once, not again in the filter of lanes)
        SELECT c.entrypoint,
               CASE WHEN c.concurrency_limit IS NULL AND c.key_concurrency_limit IS NULL AND c.rate_limit IS NULL
                    THEN claim.batch_size
                    WHEN c.entrypoint = ANY (v_limited) THEN
                         pgq._quota(c.entrypoint, c.concurrency_limit, c.rate_limit, c.rate_period,
                                    c.rate_per_key, claim.batch_size, v_now)
                    ELSE 0 END AS quota
          FROM pgq.entrypoints c
         WHERE c.entrypoint = ANY (claim.entrypoints)
           AND c.paused_at IS NULL
    ), lanes AS MATERIALIZED (
        SELECT l.entrypoint, l.priority, eps.quota,
               pgq._lane_cursor(l.entrypoint, l.priority, l.cursor_seq) AS cursor
          FROM eps
          JOIN pgq.lanes l ON l.entrypoint = eps.entrypoint
         WHERE eps.quota > 0
    ), candidates AS (
        SELECT q.id, q.entrypoint, q.priority, q.ready_seq, lanes.quota
          FROM lanes
         CROSS JOIN LATERAL (
               SELECT j.id, j.entrypoint, j.priority, j.ready_seq
                 FROM pgq.jobs j
                WHERE j.entrypoint = lanes.entrypoint
                  AND j.priority = lanes.priority
                  AND j.status = 'queued'
                  AND j.slot <> 4
                  AND j.ready_seq > lanes.cursor
                  AND j.run_at <= v_now
                ORDER BY j.ready_seq
                LIMIT least(lanes.quota, claim.batch_size)
                  FOR UPDATE SKIP LOCKED) AS q
    )
    SELECT array_agg(p.id) INTO v_ids
      FROM (SELECT r.id
              FROM (SELECT c.id, c.priority, c.ready_seq, c.quota,
                           row_number() OVER (PARTITION BY c.entrypoint
                                              ORDER BY c.priority DESC, c.ready_seq) AS n
                      FROM candidates c) r
             WHERE r.n <= r.quota
             ORDER BY r.priority DESC, r.ready_seq
             LIMIT claim.batch_size) AS p;
    END IF;
    IF v_ids IS NULL THEN
        RETURN;
    END IF;

    -- The lease carries the job's slot (lease mod 4, docs/architecture.md#leases-carry-the-slot):
    -- pgq.complete reads that slot first.
    RETURN QUERY
    WITH claimed AS (
        UPDATE pgq.jobs j
           SET status = 'running',
               lease = nextval('pgq.lease_seq') * 4 + j.slot,
               worker_id = claim.worker_id,
               started_at = v_now,
               heartbeat_at = v_now,
               claim_request = claim.request_id,
               attempt = j.attempt + 1,
               deadline_at = v_now + coalesce(j.timeout, c.run_timeout)
          FROM pgq.entrypoints c
         WHERE j.id = ANY (v_ids)
           AND j.status = c_queued AND j.slot <> 4
           AND c.entrypoint = j.entrypoint
        RETURNING j.id, j.lease, j.entrypoint, j.payload, j.headers, j.priority, j.attempt,
                  j.enqueued_at, j.run_at, j.dedupe_key, c.max_attempts, c.heartbeat_timeout,
                  extract(epoch FROM c.heartbeat_timeout)::float8 AS timeout_s,
                  j.attempt >= c.max_attempts AS last_attempt, j.ready_seq,
                  extract(epoch FROM coalesce(j.timeout, c.run_timeout))::float8 AS run_timeout_s,
                  -- Taken over from a silent worker: the sweep's note of the attempt before
                  -- (only read for a job claimed before).
                  CASE WHEN j.attempt > 1 AND j.errors -> -1 -> 'details' ->> 'error' IN ('heartbeat timeout', 'timed out')
                       THEN (j.errors -> -1 -> 'details') || jsonb_build_object('attempt', j.errors -> -1 -> 'attempt',
                                                                                'swept_at', j.errors -> -1 -> 'at')
                            || jsonb_strip_nulls(jsonb_build_object('worker_id', j.errors -> -1 -> 'worker_id'))
                  END AS taken_over
    )
    SELECT c.id, c.lease, c.entrypoint, c.payload, c.headers, c.priority, c.attempt, c.enqueued_at,
           c.run_at, c.dedupe_key, c.max_attempts, c.heartbeat_timeout, c.timeout_s, c.last_attempt,
           c.run_timeout_s, c.taken_over
      FROM claimed c
     ORDER BY c.priority DESC, c.ready_seq;
    -- Rate-limited entrypoints: the starts, one row per budget (the whole entrypoint, or each
    -- group key with rate_per_key), counted by the next claim under the same policy-row lock.
    -- (pgq._claim_keyed recorded them already: it knows each job's key and budget.)
    IF v_rated AND NOT coalesce(v_keyed, false) THEN
        INSERT INTO pgq.rate_starts (entrypoint, key_hash, rate_key, started_at, tokens, cum)
        SELECT r.*
          FROM (SELECT j.entrypoint,
                       CASE WHEN e.rate_per_key AND j.group_key IS NOT NULL THEN hashtextextended(j.group_key, 0)
                            ELSE c_whole END AS h,
                       CASE WHEN e.rate_per_key THEN j.group_key END AS k,
                       count(*)::int AS n
                  FROM pgq.jobs j
                  JOIN pgq.entrypoints e ON e.entrypoint = j.entrypoint
                 WHERE j.id = ANY (v_ids)
                   AND j.status = c_running AND j.slot <> 4
                   AND e.rate_limit IS NOT NULL
                 GROUP BY 1, 2, 3) AS b
         CROSS JOIN LATERAL pgq._rate_rows(b.entrypoint, b.h, b.k, b.n, v_now) AS r;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq.claim(uuid, text[], int, timestamptz, uuid) IS
    'Claims up to batch_size runnable jobs: priority desc, then ready order (stale jobs are swept and queued again first). SKIP LOCKED; respects concurrency limits; each claim gets a new lease. A claim re-sent with the same request_id answers the same jobs.';
