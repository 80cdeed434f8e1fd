-- Lanes, cursors and the ready-number fence (prototype "keyset"; reused by "ring").
--
-- The fence. A cursor may only pass ready numbers whose transactions have ended, or a row
-- committed late (its number drawn before a later number was claimed) would be stepped over
-- for ever. Every transaction that draws ready numbers for an entrypoint first takes a SHARED
-- transaction-level advisory lock on (pgq.ready_seq's oid, hashtext(entrypoint)) and holds it
-- to its end. A claimer reads L = the last number handed out, then probes that lock with an
-- exclusive try-lock released at once: if it is free, every transaction that drew a number
-- <= L for that entrypoint has ended (committed: visible to the next statement; or rolled
-- back: gone), so the cursor may move up to L, or to just below the first row still queued.
-- A long transaction that holds no such lock (an idle report, a forgotten BEGIN, the held
-- xid of the benchmark) does not stop the cursor; a producer's own open transaction does,
-- for its entrypoint, until it ends (the claim then scans from the old cursor: correct, and
-- as slow as today only while that producer stays open).

-- pgq._add_lanes(entrypoints, priorities): create the lanes that do not exist yet, each with
-- its cursor sequence. Called by the insert trigger; concurrent creators of one lane wait on
-- the primary key and the loser drops its sequence.
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
BEGIN
    FOR v_lane IN
        SELECT DISTINCT u.e, u.p FROM unnest(_add_lanes.entrypoints, _add_lanes.priorities) AS u(e, p)
         WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes l WHERE l.entrypoint = u.e AND l.priority = u.p)
         ORDER BY 1, 2
    LOOP
        v_id := nextval('pgq.lane_id_seq');
        v_name := 'lane_cursor_' || v_id;
        EXECUTE format('CREATE SEQUENCE pgq.%I AS bigint MINVALUE 0 START 0', v_name);
        INSERT INTO pgq.lanes (entrypoint, priority, lane_id, cursor_seq)
        VALUES (v_lane.e, v_lane.p, v_id, ('pgq.' || v_name)::regclass)
            ON CONFLICT (entrypoint, priority) DO NOTHING;
        IF NOT FOUND THEN
            EXECUTE format('DROP SEQUENCE pgq.%I', v_name);
        END IF;
    END LOOP;
END
$$;

-- pgq._ready_lock(entrypoints): the producer side of the fence; call before drawing ready
-- numbers for these entrypoints (sorted: shared locks never wait for each other, only for a
-- probe holding the exclusive lock for an instant).
CREATE OR REPLACE FUNCTION pgq._ready_lock(entrypoints text[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared('pgq.ready_seq'::regclass::oid::int, s.k)
       FROM (SELECT DISTINCT hashtext(e) AS k FROM unnest(_ready_lock.entrypoints) AS e ORDER BY 1) s;
END
$$;

-- pgq._lane_cursor(entrypoint, priority, cursor_seq): the lane's cursor, moved forward first
-- when the fence allows (see above). Every ready number <= the value returned is settled:
-- claimed, finished, canceled, rolled back or never used. Never moves backwards by itself
-- (two claimers racing may set it back a little: harmless, a scan starts a bit earlier).
CREATE OR REPLACE FUNCTION pgq._lane_cursor(entrypoint text, priority int, cursor_seq regclass)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_c    bigint := coalesce(pg_sequence_last_value(_lane_cursor.cursor_seq), 0);
    v_last bigint;
    v_key  int := hashtext(_lane_cursor.entrypoint);
    v_min  bigint;
    v_new  bigint;
    v_free boolean;
BEGIN
    -- L first, then the probe (see the fence above).
    SELECT CASE WHEN s.is_called THEN s.last_value ELSE s.last_value - 1 END INTO v_last
      FROM pgq.ready_seq s;
    IF v_last <= v_c THEN
        RETURN v_c;
    END IF;
    v_free := CASE WHEN pg_try_advisory_lock('pgq.ready_seq'::regclass::oid::int, v_key)
                   THEN pg_advisory_unlock('pgq.ready_seq'::regclass::oid::int, v_key)
                   ELSE false END;
    IF NOT v_free THEN
        RETURN v_c;  -- a producer of this entrypoint is open: keep the cursor
    END IF;
    -- A new statement, a new snapshot: every number <= v_last is committed or gone. The scan
    -- starts at the cursor and stops at the first row still queued (visible, locked or not).
    SELECT j.ready_seq INTO v_min
      FROM pgq.jobs j
     WHERE j.entrypoint = _lane_cursor.entrypoint
       AND j.priority = _lane_cursor.priority
       AND j.status = 'queued'
       AND j.ready_seq IS NOT NULL
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

-- pgq._promote(entrypoints, at, max_rows): not-yet-due jobs whose run_at has come get their
-- ready numbers (oldest run_at first). NULL entrypoints: every entrypoint (maintenance).
CREATE OR REPLACE FUNCTION pgq._promote(entrypoints text[], at timestamptz, max_rows int)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_eps text[];
    v_n   int;
BEGIN
    SELECT array_agg(d.id ORDER BY d.run_at, d.id), array_agg(DISTINCT d.entrypoint)
      INTO v_ids, v_eps
      FROM (SELECT j.id, j.run_at, j.entrypoint
              FROM pgq.jobs j
             WHERE (_promote.entrypoints IS NULL OR j.entrypoint = ANY (_promote.entrypoints))
               AND j.status = 'queued'
               AND j.ready_seq IS NULL
               AND j.run_at <= _promote.at
             ORDER BY j.run_at, j.id
             LIMIT _promote.max_rows
               FOR UPDATE SKIP LOCKED) d;
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    PERFORM pgq._ready_lock(v_eps);
    UPDATE pgq.jobs j
       SET ready_seq = r.seq
      FROM (SELECT u.id, nextval('pgq.ready_seq') AS seq
              FROM unnest(v_ids) WITH ORDINALITY AS u(id, ord)
             ORDER BY u.ord) r
     WHERE j.id = r.id;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;

-- pgq._sweep(at): stale running jobs (heartbeat older than their entrypoint's timeout) leave
-- the running state here instead of in every claim: archived as failed (attempts used up) or
-- canceled (cancellation requested), else queued again with a new ready number and the
-- timeout in their error list; the next claim takes them (attempt + 1). Returns the number of
-- jobs swept.
CREATE OR REPLACE FUNCTION pgq._sweep(at timestamptz)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_eps text[];
    v_n   int := 0;
    v_m   int;
BEGIN
    WITH dead AS (
        SELECT j.id, j.cancel_requested, j.worker_id, j.heartbeat_at
          FROM pgq.entrypoints c
          JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running'
         WHERE j.heartbeat_at < _sweep.at - c.heartbeat_timeout
           AND (j.attempt >= c.max_attempts OR j.cancel_requested)
           FOR UPDATE OF j SKIP LOCKED
    )
    SELECT count(*) INTO v_n
      FROM pgq._archive((SELECT array_agg(d.id ORDER BY d.id) FROM dead d),
                        (SELECT array_agg(CASE WHEN d.cancel_requested THEN 'canceled' ELSE 'failed' END ORDER BY d.id) FROM dead d),
                        (SELECT array_agg(jsonb_build_object('error', 'heartbeat timeout', 'worker_id', d.worker_id,
                                                             'heartbeat_at', d.heartbeat_at) ORDER BY d.id) FROM dead d),
                        _sweep.at);

    SELECT array_agg(s.id ORDER BY s.id), array_agg(DISTINCT s.entrypoint) INTO v_ids, v_eps
      FROM (SELECT j.id, j.entrypoint
              FROM pgq.entrypoints c
              JOIN pgq.jobs j ON j.entrypoint = c.entrypoint AND j.status = 'running'
             WHERE j.heartbeat_at < _sweep.at - c.heartbeat_timeout
               AND j.attempt < c.max_attempts
               AND NOT j.cancel_requested
             ORDER BY j.id
               FOR UPDATE OF j SKIP LOCKED) s;
    IF v_ids IS NULL THEN
        RETURN v_n;
    END IF;
    PERFORM pgq._ready_lock(v_eps);
    UPDATE pgq.jobs j
       SET status = 'queued',
           ready_seq = r.seq,
           lease = NULL,
           worker_id = NULL,
           started_at = NULL,
           heartbeat_at = NULL,
           errors = j.errors || jsonb_build_array(jsonb_build_object(
                        'attempt', j.attempt, 'at', _sweep.at,
                        'details', jsonb_build_object('error', 'heartbeat timeout',
                                                      'worker_id', j.worker_id,
                                                      'heartbeat_at', j.heartbeat_at)))
      FROM (SELECT u.id, nextval('pgq.ready_seq') AS seq
              FROM unnest(v_ids) WITH ORDINALITY AS u(id, ord) ORDER BY u.ord) r
     WHERE j.id = r.id;
    GET DIAGNOSTICS v_m = ROW_COUNT;
    RETURN v_n + v_m;
END
$$;

-- Lanes of the jobs already queued at install (new ones come from the insert trigger).
SELECT pgq._add_lanes(array_agg(s.entrypoint), array_agg(s.priority))
  FROM (SELECT DISTINCT j.entrypoint, j.priority FROM pgq.jobs j) s
HAVING count(*) > 0;
