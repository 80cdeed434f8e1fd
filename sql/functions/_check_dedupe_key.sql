-- pgq._check_dedupe_key(key, ord): a dedupe key a producer may use.
-- Contract: NULL passes. A key is at most 1000 bytes (the unique index on live keys cannot hold
--   much more than 2,700) and must not start with 'pgq:schedule:', the prefix of schedule fires
--   (pgq.fire_schedule, pgq.fire_schedule_now): a producer cannot take or forge the key of a
--   scheduled tick. Only a call made from inside one of those two (seen on the call stack;
--   nobody else can create a function in schema pgq) may use the prefix. ord is the key's position in the call.
-- Locking: none.
-- Errors: PQ009 naming the key (cut to 60 characters) and its position.
CREATE OR REPLACE FUNCTION pgq._check_dedupe_key(key text, ord bigint)
RETURNS void
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_stack text;
BEGIN
    IF octet_length(key) > 1000 THEN
        RAISE EXCEPTION 'dedupe key % at position % is % bytes, over the 1000-byte limit',
            quote_literal(left(key, 60) || '...'), ord, octet_length(key)
            USING ERRCODE = 'PQ009';
    END IF;
    IF starts_with(key, 'pgq:schedule:') THEN
        GET DIAGNOSTICS v_stack = PG_CONTEXT;
        -- A line of the stack starts with the function's name, schema-qualified unless it is
        -- visible on this function's search_path (pg_catalog, pgq): either way only ours
        -- matches (temporary functions are always printed qualified).
        IF v_stack !~ '(^|\n)PL/pgSQL function (pgq\.)?fire_schedule(_now)?\(' THEN
            RAISE EXCEPTION 'dedupe key % at position % uses the prefix ''pgq:schedule:'', reserved for schedule fires',
                quote_literal(left(key, 60)), ord
                USING ERRCODE = 'PQ009';
        END IF;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_dedupe_key(text, bigint) IS
    'Private. Raises PQ009 for a dedupe key over 1000 bytes or one using the reserved prefix pgq:schedule: outside pgq.fire_schedule.';
