-- pgq._json_ok(value, max_bytes): the fast test of pgq._json_problem, for the hot path.
-- Contract: true when value is NULL or fit to store (at most max_bytes as JSON text, nested at
--   most 64 levels, numbers a double holds), false otherwise; pgq._json_problem then says why.
--   A text under 130 bytes can be neither nested 65 levels deep nor hold a number outside what
--   a double holds (such a number prints with more than 300 digits), so only longer values are
--   walked, once. LANGUAGE sql, IMMUTABLE and without a SET clause, so callers inline it (the
--   one pgq function without a pinned search_path: it names pg_catalog objects only, qualified).
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._json_ok(value jsonb, max_bytes int)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
AS $$
    SELECT value IS NULL
        OR (pg_catalog.octet_length(value::pg_catalog.text) <= max_bytes
            AND (pg_catalog.octet_length(value::pg_catalog.text) < 130
                 OR NOT pg_catalog.jsonb_path_exists(value,
                        'strict $ ? (exists (@.**{65 to last}) || exists (@.** ? (@.type() == "number" && (@ > 1e308 || @ < -1e308 || (@ != 0 && @ < 1e-307 && @ > -1e-307)))))')));
$$;
COMMENT ON FUNCTION pgq._json_ok(jsonb, int) IS
    'Private. True when a JSON value is NULL or fit to store (size as text, nesting, numbers); see pgq._json_problem.';
