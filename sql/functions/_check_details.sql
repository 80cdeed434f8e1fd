-- pgq._check_details(statuses, details): the per-job arrays pgq.complete takes besides ids.
-- Contract: both one-dimensional; every details value fit to store and hand out (at most
--   1 MiB as JSON text, nested at most 64 levels, numbers a double holds: pgq._json_problem),
--   so a retry_after of 1e-400 or a result no client can decode is refused before anything is
--   written. Lengths and statuses are checked by the caller.
-- Locking: none.
-- Errors: PQ009 naming the position (PQ006 for a value over 1 MiB).
CREATE OR REPLACE FUNCTION pgq._check_details(statuses text[], details jsonb[])
RETURNS void
LANGUAGE plpgsql
IMMUTABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_bad record;
BEGIN
    PERFORM pgq._check_dims(statuses, 'statuses');
    PERFORM pgq._check_dims(details, 'details');
    IF details IS NULL THEN
        RETURN;
    END IF;
    SELECT u.ord, pgq._json_problem(u.d, 1048576) AS problem INTO v_bad
      FROM unnest(details) WITH ORDINALITY AS u(d, ord)
     WHERE NOT pgq._json_ok(u.d, 1048576)
     ORDER BY u.ord
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'details at position % %', v_bad.ord, v_bad.problem
            USING ERRCODE = CASE WHEN v_bad.problem LIKE 'is % bytes%' THEN 'PQ006' ELSE 'PQ009' END;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._check_details(text[], jsonb[]) IS
    'Private. Raises PQ009/PQ006 for multi-dimensional statuses or details, or a details value unfit to store.';
