-- pgq.unschedule(name)
-- Contract: removes the schedule called name; returns true if it existed. Jobs it already
--   fired are ordinary jobs and stay.
-- Locking: the schedule row (waits for a scheduler that is firing it right now).
-- Errors: none (an unknown name returns false).
CREATE OR REPLACE FUNCTION pgq.unschedule(name text)
RETURNS boolean
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    WITH gone AS (DELETE FROM pgq.schedules s WHERE s.name = unschedule.name RETURNING 1)
    SELECT EXISTS (SELECT 1 FROM gone);
$$;
COMMENT ON FUNCTION pgq.unschedule(text) IS 'Removes a schedule; returns true if it existed.';
