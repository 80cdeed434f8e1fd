-- pgq._add_lanes(entrypoints, priorities): create the lanes that do not exist yet.
-- Contract: a lane is (entrypoint, priority), one row of pgq.lanes, insert-once, with its own
--   cursor sequence pgq.lane_cursor_<lane_id> (starts at 0: nothing settled) and its turn
--   sequence pgq.lane_turn_<lane_id> (fair share across group keys). Called by the
--   insert trigger of pgq.jobs for the new rows, queued and scheduled alike (the cap below is
--   met by the producer, never by a later promotion). Concurrent creators of one lane wait on the
--   primary key; the loser drops the sequence it made. A claim probes every lane of its
--   entrypoints, so one statement may open at most 100 new lanes (distinct new priorities).
-- Locking: the primary key of pgq.lanes while a lane is created (once per lane, ever).
-- Errors: PQ005 more than 100 new lanes in one statement (the statement adds nothing).
CREATE OR REPLACE FUNCTION pgq._add_lanes(entrypoints text[], priorities int[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_lane record;
    v_id   bigint;
    v_name text;
    v_new  bigint;
BEGIN
    SELECT count(*) INTO v_new
      FROM (SELECT DISTINCT u.e, u.p
              FROM unnest(_add_lanes.entrypoints, _add_lanes.priorities) AS u(e, p)
             WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes l WHERE l.entrypoint = u.e AND l.priority = u.p)) n;
    IF v_new > 100 THEN
        RAISE EXCEPTION 'one statement may open at most 100 new priority lanes, this one opens %', v_new
            USING ERRCODE = 'PQ005',
                  HINT = 'Each distinct priority of an entrypoint is a lane every claim looks at: use few priorities.';
    END IF;
    FOR v_lane IN
        SELECT DISTINCT u.e, u.p
          FROM unnest(_add_lanes.entrypoints, _add_lanes.priorities) AS u(e, p)
         WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes l WHERE l.entrypoint = u.e AND l.priority = u.p)
         ORDER BY 1, 2
    LOOP
        v_id := nextval('pgq.lane_id_seq');
        v_name := 'lane_cursor_' || v_id;
        EXECUTE format('CREATE SEQUENCE pgq.%I AS bigint MINVALUE 0 START 0', v_name);
        EXECUTE format('REVOKE ALL ON SEQUENCE pgq.%I FROM PUBLIC', v_name);
        -- Fair share across group keys: the hash of the last key a keyed claim served.
        EXECUTE format('CREATE SEQUENCE pgq.%I AS bigint MINVALUE -9223372036854775808 START -9223372036854775808',
                       'lane_turn_' || v_id);
        EXECUTE format('REVOKE ALL ON SEQUENCE pgq.%I FROM PUBLIC', 'lane_turn_' || v_id);
        INSERT INTO pgq.lanes (entrypoint, priority, lane_id, cursor_seq, turn_seq)
        VALUES (v_lane.e, v_lane.p, v_id, ('pgq.' || v_name)::regclass, ('pgq.lane_turn_' || v_id)::regclass)
            ON CONFLICT (entrypoint, priority) DO NOTHING;
        IF NOT FOUND THEN
            EXECUTE format('DROP SEQUENCE pgq.%I', v_name);
            EXECUTE format('DROP SEQUENCE pgq.%I', 'lane_turn_' || v_id);
        END IF;
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgq._add_lanes(text[], int[]) IS
    'Private. Creates the missing lanes (entrypoint, priority), each with its cursor sequence and its turn sequence (fair share across group keys).';
