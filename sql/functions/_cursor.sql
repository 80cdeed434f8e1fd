-- pgq._cursor(after, kind): decode a paging cursor of pgq.list_jobs / pgq.find_history.
-- Contract: a cursor is the text the listing returned in its cursor column: 'q,<priority>,
--   <ready number>' (queued jobs, claim order; the ready number comes back in the id column), 'r,<id>' (running jobs, id order) or
--   'h,<finished_at>,<id>' (history, newest first), timestamps as JSON text (ISO 8601 with
--   offset, independent of DateStyle). Returns its parts when its kind is `kind`; NULL parts for
--   a NULL cursor (the first page).
-- Locking: none.
-- Errors: PQ009 a cursor that does not parse, or of another kind (named in the message).
CREATE OR REPLACE FUNCTION pgq._cursor(after text, kind text)
RETURNS TABLE (priority int, at timestamptz, id bigint)
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_parts text[] := string_to_array(after, ',');
BEGIN
    IF after IS NULL THEN
        RETURN QUERY SELECT NULL::int, NULL::timestamptz, NULL::bigint;
        RETURN;
    END IF;
    BEGIN
        IF v_parts[1] = kind AND kind = 'q' AND cardinality(v_parts) = 3 THEN
            -- queued: priority and ready number (in the id column)
            RETURN QUERY SELECT v_parts[2]::int, NULL::timestamptz, v_parts[3]::bigint;
            RETURN;
        ELSIF v_parts[1] = kind AND kind = 'r' AND cardinality(v_parts) = 2 THEN
            RETURN QUERY SELECT NULL::int, NULL::timestamptz, v_parts[2]::bigint;
            RETURN;
        ELSIF v_parts[1] = kind AND kind IN ('h', 's') AND cardinality(v_parts) = 3 THEN
            RETURN QUERY SELECT NULL::int, v_parts[2]::timestamptz, v_parts[3]::bigint;
            RETURN;
        END IF;
    EXCEPTION WHEN data_exception THEN
        NULL;  -- falls through to the error below
    END;
    RAISE EXCEPTION 'invalid cursor %: pass the cursor column of the previous page of the same listing',
        quote_literal(left(after, 100))
        USING ERRCODE = 'PQ009';
END
$$;
COMMENT ON FUNCTION pgq._cursor(text, text) IS
    'Private. Decodes a paging cursor (q: priority, ready number; r: id; h: finished_at, id; s: run_at, id); PQ009 when it does not parse.';
