-- pgq._check_name(value, what, errcode): validate an entrypoint or schedule name.
-- Contract: a name is 1 to 200 bytes without control characters (so notifications naming it
--   stay small). Raises errcode with a message naming the bad value; returns nothing otherwise.
--   enqueue_many checks whole arrays of entrypoints itself, in one pass, with the same rule.
-- Locking: none.
-- Errors: errcode (PQ001 for entrypoints, PQ011 for schedule names).
CREATE OR REPLACE FUNCTION pgq._check_name(value text, what text, errcode text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF value IS NULL OR value = '' OR octet_length(value) > 200 OR value ~ '[[:cntrl:]]' THEN
        RAISE EXCEPTION 'invalid % %: must be 1 to 200 bytes without control characters',
            what, coalesce(quote_literal(left(value, 220)), 'NULL')
            USING ERRCODE = errcode;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_name(text, text, text) IS
    'Private. Raises errcode unless the name is 1 to 200 bytes without control characters.';
