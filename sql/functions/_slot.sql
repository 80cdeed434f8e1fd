-- pgq._slot(): the ring slot new due jobs enter (docs/decisions/0006).
-- Contract: pgq.ring_seq's last value mod 4 (0..3). A sequence: reading it, and pgq.maintain
--   moving it on, leaves no row version behind. The default of pgq.jobs.slot; jobs not due yet
--   go to slot 4 (jobs_scheduled) instead, given explicitly by their writers. One expression
--   with no FROM, no SET clause and only qualified pg_catalog names, so that it is inlined
--   where it is planned (a SQL function that is not inlined is parsed and planned again by
--   every statement that calls it, before PostgreSQL 18). Before pgq.maintain first moves
--   the ring, the sequence has no last value (NULL): slot 0, its START.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._slot()
RETURNS smallint
LANGUAGE sql
VOLATILE
AS $$
    SELECT (COALESCE(pg_catalog.pg_sequence_last_value('pgq.ring_seq'::pg_catalog.regclass), 0)
            OPERATOR(pg_catalog.%) 4)::smallint
$$;
COMMENT ON FUNCTION pgq._slot() IS
    'Private. The ring slot (0..3) new due jobs enter: pgq.ring_seq mod 4.';
