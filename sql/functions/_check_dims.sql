-- pgq._check_dims(value, what): a one-dimensional array.
-- Contract: NULL and one-dimensional arrays (empty ones too) pass; an array of two or more
--   dimensions ('{{1},{2}}') is refused instead of being flattened or failing later. Returns
--   true (so a LANGUAGE sql function can call it in a WHERE clause).
-- Locking: none.
-- Errors: PQ009 naming the argument and its dimensions.
CREATE OR REPLACE FUNCTION pgq._check_dims(value anyarray, what text)
RETURNS boolean
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF array_ndims(value) > 1 THEN
        RAISE EXCEPTION '% must be a one-dimensional array, got % dimensions %',
            what, array_ndims(value), array_dims(value)
            USING ERRCODE = 'PQ009';
    END IF;
    RETURN true;
END
$$;
COMMENT ON FUNCTION pgq._check_dims(anyarray, text) IS
    'Private. Raises PQ009 for an array of more than one dimension.';
