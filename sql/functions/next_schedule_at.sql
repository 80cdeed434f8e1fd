-- pgq.next_schedule_at()
-- Contract: when a scheduler should next look: the earliest next_run_at of idle schedules (or
--   their retry_at, when pgq.release_schedule set a later one), or
--   the moment a firing schedule's claimer would count as silent (heartbeat + fire_timeout).
--   NULL when there are no schedules.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq.next_schedule_at()
RETURNS timestamptz
LANGUAGE sql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT min(CASE WHEN s.state = 'idle' THEN greatest(s.next_run_at, s.retry_at) ELSE s.heartbeat_at + s.fire_timeout END)
      FROM pgq.schedules s;
$$;
COMMENT ON FUNCTION pgq.next_schedule_at() IS
    'Earliest time a schedule becomes due (or a silent claimer may be taken over); NULL without schedules.';
