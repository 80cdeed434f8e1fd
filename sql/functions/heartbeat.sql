-- pgq.heartbeat(worker_id, ids, leases, at)
-- Contract: refreshes heartbeat_at = at for each job this worker still owns under that lease,
--   and answers one row per input id, in input order: state 'ok', 'cancel_requested' (still
--   owned, but pgq.cancel asked it to stop) or 'lost' (re-claimed by another worker, finished
--   or gone). A lost job is never touched. at NULL means now(). Also refreshes the worker's
--   row in the workers registry (pgq.register_worker), once per call, also for empty arrays:
--   an idle worker stays visible by calling it with no jobs.
-- Locking: row locks on the owned jobs and the worker's registry row (both updates are HOT:
--   heartbeat_at and last_seen_at are in no index).
-- Errors: PQ009, PQ003 (see pgq._check_batch).
CREATE OR REPLACE FUNCTION pgq.heartbeat(
    worker_id  uuid,
    ids        bigint[],
    leases     bigint[],
    at         timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint, state text)
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
BEGIN
    PERFORM pgq._check_time(heartbeat.at, 'at');
    PERFORM pgq._check_batch(heartbeat.worker_id, heartbeat.ids, heartbeat.leases);
    UPDATE pgq.workers w SET last_seen_at = coalesce(heartbeat.at, now()) WHERE w.worker_id = heartbeat.worker_id;
    RETURN QUERY
    WITH input AS (
        SELECT u.id, u.lease, u.ord
          FROM unnest(heartbeat.ids, heartbeat.leases) WITH ORDINALITY AS u(id, lease, ord)
    ), beat AS (
        UPDATE pgq.jobs j
           SET heartbeat_at = coalesce(heartbeat.at, now())
          FROM input i
         WHERE j.id = i.id
           AND j.lease = i.lease
           AND j.status = 'running'
           AND j.worker_id = heartbeat.worker_id
        RETURNING j.id, j.cancel_requested
    )
    SELECT i.id,
           CASE WHEN b.id IS NULL THEN 'lost'
                WHEN b.cancel_requested THEN 'cancel_requested'
                ELSE 'ok' END
      FROM input i
      LEFT JOIN beat b ON b.id = i.id
     ORDER BY i.ord;
END
$$;
COMMENT ON FUNCTION pgq.heartbeat(uuid, bigint[], bigint[], timestamptz) IS
    'Refreshes the heartbeat of jobs this lease still owns; one row per id: ok, cancel_requested or lost.';
