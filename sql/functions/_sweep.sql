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
--   for the next sweep. Returns the number of jobs swept.
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
AS $$
#variable_conflict use_column
DECLARE
    v_n    int := 0;
    v_m    int;
    v_dead record;
    v_eps  text[];
BEGIN
    SELECT array_agg(s.id ORDER BY s.id) AS ids,
           array_agg(CASE WHEN s.cancel_requested THEN 'canceled' ELSE 'failed' END ORDER BY s.id) AS statuses,
           array_agg(jsonb_build_object('error', 'heartbeat timeout', 'worker_id', s.worker_id,
                                        'heartbeat_at', s.heartbeat_at) ORDER BY s.id) AS details
      INTO v_dead
      FROM (SELECT j.id, j.cancel_requested, j.worker_id, j.heartbeat_at
              FROM pgq.entrypoints c
              JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running'
             WHERE (_sweep.entrypoints IS NULL OR c.entrypoint = ANY (_sweep.entrypoints))
               AND j.heartbeat_at < _sweep.at - c.heartbeat_timeout
               AND (j.attempt >= c.max_attempts OR j.cancel_requested)
               FOR UPDATE OF j SKIP LOCKED) s;
    IF v_dead.ids IS NOT NULL THEN
        SELECT count(*) INTO v_n
          FROM pgq._archive(v_dead.ids, v_dead.statuses, v_dead.details, _sweep.at);
    END IF;

    SELECT array_agg(DISTINCT j.entrypoint) INTO v_eps
      FROM pgq.entrypoints c
      JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running'
     WHERE (_sweep.entrypoints IS NULL OR c.entrypoint = ANY (_sweep.entrypoints))
       AND c.paused_at IS NULL
       AND coalesce(c.concurrency_limit, 1) > 0
       AND j.heartbeat_at < _sweep.at - c.heartbeat_timeout;
    IF v_eps IS NULL THEN
        RETURN v_n;
    END IF;
    PERFORM pgq._ready_lock(v_eps);
    WITH stale AS (
        SELECT j.id
          FROM pgq.entrypoints c
          JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running'
         WHERE c.entrypoint = ANY (v_eps)
           AND j.heartbeat_at < _sweep.at - c.heartbeat_timeout
           AND j.attempt < c.max_attempts
           AND NOT j.cancel_requested
         ORDER BY j.priority DESC, j.run_at, j.id
           FOR UPDATE OF j SKIP LOCKED
    )
    UPDATE pgq.jobs j
       SET status = 'queued',
           ready_seq = nextval('pgq.ready_seq'),
           lease = NULL,
           worker_id = NULL,
           started_at = NULL,
           heartbeat_at = NULL,
           claim_request = NULL,
           -- No lease in the entry: a lease in the error list means that attempt's result was
           -- applied (see pgq.complete).
           errors = j.errors || jsonb_build_array(jsonb_build_object(
                        'attempt', j.attempt, 'at', _sweep.at,
                        'details', jsonb_build_object('error', 'heartbeat timeout',
                                                      'worker_id', j.worker_id,
                                                      'heartbeat_at', j.heartbeat_at)))
      FROM stale
     WHERE j.id = stale.id
       AND j.status = 'running';
    GET DIAGNOSTICS v_m = ROW_COUNT;
    RETURN v_n + v_m;
END
$$;
COMMENT ON FUNCTION pgq._sweep(text[], timestamptz) IS
    'Private. Stale running jobs: archived (attempts used up, cancel requested) or queued again with a new ready number.';
