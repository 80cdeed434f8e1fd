-- pgq._valid_name(name): the one rule for entrypoint and schedule names.
-- Contract: true when name is 1 to 200 bytes, not the word NULL (any case), and holds no
--   control character, comma, brace, double quote or backslash, and neither starts nor ends
--   with a space: then the name reads back unchanged as an element of an unquoted array
--   literal ('{a.b,c.d}'), so a literal can never split one name into two, trim it or turn it
--   into NULL. NULL for NULL. Used by pgq._check_name (the error), the hot-path checks of
--   enqueue/enqueue_many and the CHECK constraints on pgq.entrypoints and pgq.schedules
--   (pgq.jobs through its entrypoint row, see pgq._jobs_after_insert). LANGUAGE sql,
--   IMMUTABLE and without a SET clause, so callers inline it; it names pg_catalog objects only,
--   qualified.
-- Locking: none.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._valid_name(name text)
RETURNS boolean
LANGUAGE sql
IMMUTABLE
PARALLEL SAFE
AS $$
    SELECT pg_catalog.octet_length(name) OPERATOR(pg_catalog.<=) 200
       AND name OPERATOR(pg_catalog.~) '^[^[:cntrl:],{}"\\ ]([^[:cntrl:],{}"\\]*[^[:cntrl:],{}"\\ ])?$'
       AND pg_catalog.upper(name) OPERATOR(pg_catalog.<>) 'NULL';
$$;
COMMENT ON FUNCTION pgq._valid_name(text) IS
    'Private. The name rule: 1 to 200 bytes, not NULL, no control characters, commas, braces, double quotes, backslashes or surrounding spaces.';
