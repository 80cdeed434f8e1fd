-- pgq.release(worker_id, ids, leases)
-- Contract: gives back claimed jobs that never started (a shutting-down worker): each job this
--   worker still owns under that lease returns to queued, keeps its place (run_at unchanged) and
--   its attempt count is restored (a release is not an attempt). A job whose cancellation was
--   requested moves to history as canceled instead. Returns one row per job given back: id and
--   status, 'queued' (back in the queue) or 'canceled' (in history); a stale lease is ignored.
--   at NULL means now().
-- Locking: row locks on the released jobs.
-- Errors: PQ009, PQ003 (see pgq._check_batch).
CREATE OR REPLACE FUNCTION pgq.release(
    worker_id  uuid,
    ids        bigint[],
    leases     bigint[],
    at         timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint, status text)
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
    v_canceled bigint[];
BEGIN
    PERFORM pgq._check_batch(release.worker_id, release.ids, release.leases);

    -- A job whose cancellation was requested is not queued again: it ends as canceled.
    SELECT array_agg(l.id) INTO v_canceled
      FROM (SELECT j.id
              FROM pgq.jobs j
              JOIN unnest(release.ids, release.leases) AS u(id, lease) ON j.id = u.id AND j.lease = u.lease
             WHERE j.status = 'running'
               AND j.worker_id = release.worker_id
               AND j.cancel_requested
             ORDER BY j.id
               FOR UPDATE OF j) AS l;
    IF v_canceled IS NOT NULL THEN
        RETURN QUERY SELECT a.id, a.status
                       FROM pgq._archive(v_canceled, array_fill('canceled'::text, ARRAY[cardinality(v_canceled)]),
                                         NULL, coalesce(release.at, now())) AS a;
    END IF;

    RETURN QUERY
    UPDATE pgq.jobs j
       SET status = 'queued',
           attempt = j.attempt - 1,
           lease = NULL,
           worker_id = NULL,
           started_at = NULL,
           heartbeat_at = NULL,
           claim_request = NULL
      FROM unnest(release.ids, release.leases) AS u(id, lease)
     WHERE j.id = u.id
       AND j.lease = u.lease
       AND j.status = 'running'
       AND j.worker_id = release.worker_id
    RETURNING j.id, j.status;
END
$$;
COMMENT ON FUNCTION pgq.release(uuid, bigint[], bigint[], timestamptz) IS
    'Returns claimed, never-started jobs to the queue without counting an attempt (a job whose cancel was requested ends canceled); returns id and status per job.';
