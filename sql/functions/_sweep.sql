-- pgq._sweep(entrypoints, at): stale running jobs leave the running state.
-- Contract: running jobs of the given entrypoints (NULL: every entrypoint) whose heartbeat is
--   older than their entrypoint's heartbeat_timeout at `at` (their worker is gone): those whose
--   attempts are used up go to history as failed, those flagged for cancellation as canceled;
--   the others are queued again (lease, worker and heartbeat cleared, a new ready number behind
--   the fence, the timeout noted in their error list) and the next claim takes them as a new
--   attempt. A paused entrypoint's stale jobs (pgq.pause, or concurrency_limit 0) are left
--   running as they are, under their old lease, until it is resumed (nothing would run them, and
--   their worker, if only slow, may still complete them); those out of attempts or flagged for
--   cancellation are archived all the same. SKIP LOCKED: a job a concurrent call holds is left
--   for the next sweep. First, running jobs past their attempt's deadline (deadline_at, see
--   pgq.claim) are ended as timed out (pgq._time_out: a failed attempt, the retry policy
--   applies), whether their worker is alive, hung or gone, paused or not. Returns the number
--   of jobs swept (timed out ones included).
-- Locking: row locks on the swept jobs.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._sweep(entrypoints text[], at timestamptz)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
-- Joins by hash only (docs/decisions/0007): the queue-again UPDATE meets pgq.jobs through one
-- scan by id per partition, not a probe of every partition per job; the stale read walks the
-- running jobs of every entrypoint either way.
SET enable_nestloop = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    v_n     int := 0;
    v_m     int;
    v_stale record;
    v_late  bigint[];
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_running constant text := 'running';
BEGIN
    -- One locked read of the stale jobs (the running index is walked once; under a held horizon
    -- that walk is the cost): those to archive, and those to queue again with the entrypoints
    -- whose fence their ready numbers need.
    SELECT array_agg(s.id ORDER BY s.id) FILTER (WHERE s.late) AS late_ids,
           array_agg(s.id ORDER BY s.id) FILTER (WHERE s.dead) AS dead_ids,
           -- 'failed': pgq._archive ends a job whose cancellation was requested as canceled,
           -- and appends the timeout to the error list either way.
           array_agg('failed'::text ORDER BY s.id) FILTER (WHERE s.dead) AS statuses,
           array_agg(jsonb_build_object('error', 'heartbeat timeout', 'worker_id', s.worker_id,
                                        'heartbeat_at', s.heartbeat_at) ORDER BY s.id)
               FILTER (WHERE s.dead) AS details,
           array_agg(s.id ORDER BY s.priority DESC, s.run_at, s.id) FILTER (WHERE NOT s.dead AND NOT s.late) AS back_ids,
           array_agg(DISTINCT s.entrypoint) FILTER (WHERE NOT s.dead AND NOT s.late) AS back_eps
      INTO v_stale
      FROM (SELECT j.id, j.entrypoint, j.priority, j.run_at, j.cancel_requested, j.worker_id,
                   j.heartbeat_at, late.late,
                   NOT late.late AND (j.attempt >= c.max_attempts OR j.cancel_requested) AS dead
              FROM pgq.entrypoints c
              JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running' AND j.slot <> 4
             CROSS JOIN LATERAL (SELECT coalesce(j.deadline_at <= _sweep.at, false) AS late) AS late
             WHERE (_sweep.entrypoints IS NULL OR c.entrypoint = ANY (_sweep.entrypoints))
               AND (late.late
                    OR (j.heartbeat_at < _sweep.at - c.heartbeat_timeout
                        AND (j.attempt >= c.max_attempts OR j.cancel_requested
                             OR (c.paused_at IS NULL AND coalesce(c.concurrency_limit, 1) > 0))))
               FOR UPDATE OF j SKIP LOCKED) s;

    -- Past their deadline: a failed attempt each, timed out (the retry policy decides).
    IF v_stale.late_ids IS NOT NULL THEN
        v_late := pgq._time_out(v_stale.late_ids, _sweep.at);
        v_n := cardinality(v_late);
    END IF;

    IF v_stale.dead_ids IS NOT NULL THEN
        SELECT v_n + count(*) INTO v_n
          FROM pgq._archive(v_stale.dead_ids, v_stale.statuses, v_stale.details, _sweep.at);
    END IF;
    IF v_stale.back_ids IS NULL THEN
        RETURN v_n;
    END IF;

    PERFORM pgq._ready_lock(v_stale.back_eps);
    UPDATE pgq.jobs j
       SET status = 'queued',
           ready_seq = u.seq,
           lease = NULL,
           worker_id = NULL,
           started_at = NULL,
           heartbeat_at = NULL,
           claim_request = NULL,
           -- No lease in the entry: a lease in the error list means that attempt's result was
           -- applied (see pgq.complete).
           errors = j.errors || jsonb_build_array(jsonb_build_object(
                        'attempt', j.attempt, 'at', _sweep.at, 'decision', 'retry',
                        'details', jsonb_build_object('error', 'heartbeat timeout',
                                                      'worker_id', j.worker_id,
                                                      'heartbeat_at', j.heartbeat_at)))
      -- The ready numbers drawn here, in the order of back_ids (after the sort), whatever the join.
      FROM (SELECT u.id, nextval('pgq.ready_seq') AS seq
              FROM unnest(v_stale.back_ids) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord) AS u
     WHERE j.id = u.id
       AND j.id = ANY (v_stale.back_ids)
       AND j.status = c_running AND j.slot <> 4;
    GET DIAGNOSTICS v_m = ROW_COUNT;
    RETURN v_n + v_m;
END
$$;
COMMENT ON FUNCTION pgq._sweep(text[], timestamptz) IS
    'Private. Stale running jobs: archived (attempts used up, cancel requested) or queued again with a new ready number.';
