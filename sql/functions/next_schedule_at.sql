-- pgq.next_schedule_at(worker_id, at)
-- Contract: when a scheduler should next look: the earliest next_run_at of idle schedules (or
--   their retry_at, when pgq.release_schedule set a later one), or
--   the moment a firing schedule's claimer would count as silent (heartbeat + fire_timeout).
--   With a worker_id, only the schedules that worker may claim (pgq._schedule_served, as
--   pgq.claim_schedules decides at `at`): a due schedule that nobody serves does not make a
--   registered scheduler wake at once, again and again. NULL when there are none (worker_id
--   NULL: every schedule). at NULL means now().
-- Locking: none.
-- Errors: PQ009 at out of range.
CREATE OR REPLACE FUNCTION pgq.next_schedule_at(
    worker_id  uuid        DEFAULT NULL,
    at         timestamptz DEFAULT NULL
)
RETURNS timestamptz
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT min(CASE WHEN s.state = 'idle' THEN greatest(s.next_run_at, s.retry_at) ELSE s.heartbeat_at + s.fire_timeout END)
      FROM pgq.schedules s
     WHERE next_schedule_at.worker_id IS NULL
        OR pgq._schedule_served(s.entrypoint, next_schedule_at.worker_id,
                                coalesce(pgq._check_time(next_schedule_at.at, 'at'), now()));
$$;
COMMENT ON FUNCTION pgq.next_schedule_at(uuid, timestamptz) IS
    'Earliest time a schedule becomes due (or a silent claimer may be taken over); with a worker_id, only the schedules it may claim (their entrypoint served); NULL without any.';
