-- pgq._notify(kind, field, vals): send {"kind": kind, field: [...]} on channel pgq_events.
-- Contract: values are split into chunks so each payload stays far below NOTIFY's 8000-byte
--   limit (15 entrypoints of at most 200 bytes, or 300 ids, per notification), and one call sends
--   at most 10 of them (150 entrypoints, 3,000 ids): the values past those are not announced, and
--   workers find that work by polling (a notification is a hint). Sends nothing for
--   an empty or NULL array. Identical payloads in one transaction are folded by PostgreSQL.
-- Locking: none. NOTIFY is delivered at commit, never before.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._notify(kind text, field text, vals jsonb)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    -- Values per notification: 15 entrypoints of at most 200 bytes, or 300 ids.
    v_chunk int := CASE WHEN _notify.field = 'ids' THEN 300 ELSE 15 END;
BEGIN
    IF _notify.vals IS NULL OR jsonb_array_length(_notify.vals) = 0 THEN
        RETURN;
    END IF;
    -- One chunk (the common case): no query.
    IF jsonb_array_length(_notify.vals) <= v_chunk THEN
        PERFORM pg_notify('pgq_events', jsonb_build_object('kind', _notify.kind, _notify.field, _notify.vals)::text);
        RETURN;
    END IF;
    PERFORM pg_notify('pgq_events', jsonb_build_object('kind', _notify.kind, _notify.field, chunk.vals)::text)
       FROM (SELECT jsonb_agg(v.value ORDER BY v.ord) AS vals
               FROM jsonb_array_elements(_notify.vals) WITH ORDINALITY AS v(value, ord)
              WHERE v.ord <= 10 * v_chunk
              GROUP BY (v.ord - 1) / v_chunk) AS chunk;
END
$$;
COMMENT ON FUNCTION pgq._notify(text, text, jsonb) IS
    'Private. Sends {"kind": kind, field: vals} on pgq_events in chunks well under the NOTIFY size limit.';
