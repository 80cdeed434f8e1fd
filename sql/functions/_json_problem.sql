-- pgq._json_problem(value, max_bytes): what makes a JSON value unfit to store and hand out.
-- Contract: NULL when the value is NULL or fit; otherwise a short text naming the problem:
--   over max_bytes as JSON text (measured uncompressed: octet_length of its text form, what a
--   client receives), nested deeper than 64 levels (no value at level 65 or below; the top
--   value is level 0), or a number that a double cannot hold (magnitude above 1e308, or
--   non-zero and below 1e-307): every client decodes what is accepted (Python's json stops near
--   1000 levels and at 4300-digit integers; JavaScript numbers are doubles).
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._json_problem(value jsonb, max_bytes int)
RETURNS text
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_bytes int;
BEGIN
    IF value IS NULL THEN
        RETURN NULL;
    END IF;
    v_bytes := octet_length(value::text);
    IF v_bytes > max_bytes THEN
        RETURN format('is %s bytes, over the %s-byte limit', v_bytes, max_bytes);
    END IF;
    IF jsonb_path_exists(value, 'strict $.**{65 to last}') THEN
        RETURN 'is nested deeper than 64 levels';
    END IF;
    IF jsonb_path_exists(value, 'strict $.** ? (@.type() == "number" && (@ > 1e308 || @ < -1e308 || (@ != 0 && @ < 1e-307 && @ > -1e-307)))') THEN
        RETURN format('holds the number %s, outside what a double holds (0 or 1e-307 to 1e308 in magnitude)',
                      (SELECT left(n::text, 40) || CASE WHEN length(n::text) > 40 THEN '...' ELSE '' END
                         FROM jsonb_path_query(value, 'strict $.** ? (@.type() == "number" && (@ > 1e308 || @ < -1e308 || (@ != 0 && @ < 1e-307 && @ > -1e-307)))') AS n
                        LIMIT 1));
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._json_problem(jsonb, int) IS
    'Private. NULL when a JSON value is fit to store (size as text, nesting, numbers), else the problem.';
