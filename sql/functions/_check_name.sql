-- pgq._check_name(value, what, errcode): validate an entrypoint or schedule name.
-- Contract: raises errcode with a message naming the bad value unless pgq._valid_name(value)
--   (the one name rule: 1 to 200 bytes without control characters, commas, braces, double
--   quotes, backslashes or surrounding spaces, not the word NULL); returns nothing otherwise.
-- Locking: none.
-- Errors: errcode (PQ001 for entrypoints, PQ011 for schedule names).
CREATE OR REPLACE FUNCTION pgq._check_name(value text, what text, errcode text)
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    IF NOT coalesce(pgq._valid_name(value), false) THEN
        RAISE EXCEPTION 'invalid % %: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
            what, coalesce(quote_literal(left(value, 220)), 'NULL')
            USING ERRCODE = errcode;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_name(text, text, text) IS
    'Private. Raises errcode unless pgq._valid_name(value).';
