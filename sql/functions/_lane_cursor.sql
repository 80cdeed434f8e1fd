-- pgq._lane_cursor(entrypoint, priority, cursor_seq): a lane's cursor, moved on first when
--   the fence allows.
-- Contract: returns a ready number c such that every job of the lane with a ready number <= c
--   is settled (claimed, finished, canceled, rolled back or never used): a claim reads the lane
--   from ready_seq > c. To move on, it reads L, the last number handed out, then probes the
--   fence (pgq._ready_lock) with an exclusive try-lock released at once: if free, every
--   transaction that drew a number <= L for this entrypoint has ended, and the next statement
--   (a new snapshot) finds the first row still queued above the cursor; the cursor moves to
--   just below it, or to L. If a producer of this entrypoint is open, the cursor stays (claims
--   then read from the old cursor: correct, and only as slow as the walk behind it).
--   Two claimers racing may set the cursor back a little: harmless, a read starts earlier.
-- Locking: an exclusive advisory try-lock for an instant; no row locks.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._lane_cursor(entrypoint text, priority int, cursor_seq regclass)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_c    bigint := coalesce(pg_sequence_last_value(_lane_cursor.cursor_seq), 0);
    v_last bigint;
    v_key  int := hashtext(_lane_cursor.entrypoint);
    v_min  bigint;
    v_new  bigint;
BEGIN
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE s.last_value - 1 END INTO v_last
      FROM pgq.ready_seq s;
    IF v_last <= v_c THEN
        RETURN v_c;
    END IF;
    IF NOT pg_try_advisory_lock('pgq.ready_seq'::regclass::oid::int, v_key) THEN
        RETURN v_c;
    END IF;
    PERFORM pg_advisory_unlock('pgq.ready_seq'::regclass::oid::int, v_key);
    SELECT j.ready_seq INTO v_min
      FROM pgq.jobs j
     WHERE j.entrypoint = _lane_cursor.entrypoint
       AND j.priority = _lane_cursor.priority
       AND j.status = 'queued'
       AND j.slot <> 4
       AND j.ready_seq > v_c
     ORDER BY j.ready_seq
     LIMIT 1;
    v_new := CASE WHEN v_min IS NULL THEN v_last ELSE least(v_last, v_min - 1) END;
    IF v_new > v_c THEN
        PERFORM setval(_lane_cursor.cursor_seq, v_new);
        RETURN v_new;
    END IF;
    RETURN v_c;
END
$$;
COMMENT ON FUNCTION pgq._lane_cursor(text, int, regclass) IS
    'Private. The lane''s claim cursor, moved on past settled ready numbers when no producer of the entrypoint is open.';
