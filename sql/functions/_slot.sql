-- pgq._slot(): the ring slot new due jobs enter (docs/decisions/0006).
-- Contract: pgq.ring_seq's last value mod 4 (0..3). A sequence: reading it, and pgq.maintain
--   moving it on, leaves no row version behind. The default of pgq.jobs.slot; jobs not due yet
--   go to slot 4 (jobs_scheduled) instead, given explicitly by their writers.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._slot()
RETURNS smallint
LANGUAGE sql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT (s.last_value % 4)::smallint FROM pgq.ring_seq s
$$;
COMMENT ON FUNCTION pgq._slot() IS
    'Private. The ring slot (0..3) new due jobs enter: pgq.ring_seq mod 4.';
