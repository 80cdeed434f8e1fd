-- pgq._schedule_served(entrypoint, claimer, at): may this claimer fire a schedule of this
--   entrypoint now?
-- Contract: true when the claimer is not in the workers registry (a client that does not
--   register, such as a psql loop or a 0.1.0 worker: it fires every schedule, as before), or
--   when a live worker serves the entrypoint: one in pgq.workers that announced it and was
--   last seen within its timeout at `at` (the claimer itself, or any other: a process that
--   only runs schedules fires them for the workers that run the jobs). A schedule nobody
--   serves is therefore not fired; it stays due, and when a worker serving it starts, its
--   catch_up decides (once: one fire for the missed ticks; skip: the next tick). So its jobs
--   cannot pile up with no consumer. Used by pgq.claim_schedules and pgq.next_schedule_at.
-- Locking: none (reads pgq.workers).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._schedule_served(entrypoint text, claimer uuid, at timestamptz)
RETURNS boolean
LANGUAGE sql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT NOT EXISTS (SELECT 1 FROM pgq.workers c WHERE c.worker_id = _schedule_served.claimer)
        OR EXISTS (SELECT 1 FROM pgq.workers w
                    WHERE _schedule_served.entrypoint = ANY (w.entrypoints)
                      AND w.last_seen_at >= _schedule_served.at - w.timeout);
$$;
COMMENT ON FUNCTION pgq._schedule_served(text, uuid, timestamptz) IS
    'Private. Whether a claimer may fire a schedule of this entrypoint: it is unregistered, or a live registered worker serves the entrypoint.';
