-- pgq._check_interval(value, what, lo, hi, errcode): an interval within sane bounds.
-- Contract: NULL passes (the caller decides what NULL means). Otherwise lo <= value <= hi
--   (interval comparison: a month counts as 30 days, so callers state bounds in days), which
--   also refuses the infinite intervals of PostgreSQL 17 and later. Returns the value.
-- Locking: none.
-- Errors: errcode (PQ008 for policy values, PQ009 for other arguments), naming the argument,
--   the value and the bounds.
CREATE OR REPLACE FUNCTION pgq._check_interval(value interval, what text, lo interval, hi interval,
                                               errcode text DEFAULT 'PQ008')
RETURNS interval
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF value < lo OR value > hi THEN
        RAISE EXCEPTION '% must be between % and %, got %', what, lo, hi, value
            USING ERRCODE = errcode;
    END IF;
    RETURN value;
END
$$;
COMMENT ON FUNCTION pgq._check_interval(interval, text, interval, interval, text) IS
    'Private. Raises errcode unless the interval is NULL or within lo .. hi; returns it.';
