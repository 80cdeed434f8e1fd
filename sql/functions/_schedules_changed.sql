-- pgq._schedules_changed(): statement-level trigger on pgq.schedules.
-- Contract: a schedule was added, removed, or its cron expression or time zone changed: sends
--   {"kind": "schedules"} on pgq_events so sleeping schedulers recompute when to wake.
-- Locking: none.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._schedules_changed()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    PERFORM pg_notify('pgq_events', '{"kind": "schedules"}');
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._schedules_changed() IS
    'Private trigger: sends {"kind":"schedules"} on pgq_events when schedules are added, removed or re-timed.';
