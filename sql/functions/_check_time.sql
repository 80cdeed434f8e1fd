-- pgq._check_time(value, what): a time the queue can store, compute with and hand to clients.
-- Contract: NULL passes (the caller's default applies). Otherwise the time must be finite and
--   from 1970-01-01 00:00 UTC (inclusive) to 9000-01-01 00:00 UTC (exclusive): far enough from
--   the limits of timestamptz that adding the largest allowed interval (see
--   pgq._check_interval callers) or subtracting it cannot overflow, and within what every client
--   language decodes (Python's datetime stops at year 9999). Returns the value, so a caller
--   writes `coalesce(pgq._check_time(f.at, 'at'), now())`.
-- Locking: none.
-- Errors: PQ009 naming the argument and the value.
CREATE OR REPLACE FUNCTION pgq._check_time(value timestamptz, what text)
RETURNS timestamptz
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF value < timestamptz '1970-01-01 00:00:00+00' OR value >= timestamptz '9000-01-01 00:00:00+00' THEN
        RAISE EXCEPTION '% % is out of range: times must be finite, from 1970-01-01 to 9000-01-01 UTC',
            what, quote_literal(value::text)
            USING ERRCODE = 'PQ009';
    END IF;
    RETURN value;
END
$$;
COMMENT ON FUNCTION pgq._check_time(timestamptz, text) IS
    'Private. Raises PQ009 unless the time is NULL or finite within 1970-01-01 .. 9000-01-01 UTC; returns it.';
