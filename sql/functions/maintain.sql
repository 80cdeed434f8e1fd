-- pgq.maintain(at, min_interval): stale recovery, promotion and the ring's reclaim
--   (docs/decisions/0006).
-- Contract: one maintainer at a time: the others answer 'busy' at once, having done nothing
--   (counts 0, bytes NULL). With min_interval, a call made less than min_interval after the
--   last pass (pgq.maintained_at, the server's clock; a pass stamped later than now, the clock
--   set back, is not recent) answers 'recent' at once, having done nothing and taken no lock:
--   a fleet of workers that each call every few seconds makes at most one pass per
--   min_interval between them. The maintainer, in this order:
--   1. sweeps stale running jobs (pgq._sweep: archived when their attempts are used up or their
--      cancellation was requested, else queued again with a new ready number);
--   2. promotes due scheduled jobs into the ring (pgq._promote, at most 10,000 per call), and
--      removes the rate limits' starts that left their window (pgq.rate_starts: those that left
--      it since the last call's `at`, pgq.rate_cut_at, and the second before; the minute
--      before each rate-limited entrypoint's window when that call is older or `at` went
--      back; once an hour of `at`, every row outside its entrypoint's window, and the rows of
--      entrypoints without a rate limit);
--   3. carries forward: when the next slot of the ring (the one to be reused) holds between 1
--      and 1,000 live rows (stragglers: long-running or retried jobs, the tail of a backlog),
--      they move to the current slot as they are (same id, lease, ready number, every column;
--      a DELETE ... RETURNING + INSERT of the partitions themselves, so no notification is
--      sent); rows locked by someone else are moved by a later call. A next slot holding more
--      (a backlog) stays: the ring stops turning until it drains and the current slot grows;
--   4. rotates (the next slot becomes current, pgq.ring_seq) when the next slot has no pages
--      at all (no rows, truncated or never used) and the last rotation is at least 2 seconds
--      old on the server's clock (pgq.ring_rotated_at), or later than now (the clock was set
--      back);
--   5. truncates at most one slot other than the current one that has pages but no live row
--      (the next slot first, then the oldest), as the last statement: everything it returns is
--      computed first, pgq.maintained_at set, then the partition's lock is asked for with
--      lock_timeout 5 ms, its emptiness checked again under the lock, and TRUNCATE. A lock not
--      granted within 5 ms (a reader of pgq.jobs in an open transaction, a heavy queue of
--      calls) is an answer: state 'busy', truncated NULL, lock_wait_ms set.
--   Returns one row: state ('ok', 'busy' or 'recent' as above), swept, promoted, carried (jobs),
--   truncated (the partition emptied, or NULL), rotated, lock_wait_ms (how long the
--   truncation's lock was waited for, NULL when none was asked for) and bytes (heap, TOAST and
--   indexes of jobs_0 .. jobs_3 before the truncation). at NULL means now() (the clock of the sweep and the
--   promotion; the 2-second rule reads the server's clock).
--   Safe inside a transaction that already used pgq.jobs: its own locks do not conflict, and a
--   slot this session still has in use (an open cursor) is left for a later call ('busy'); the
--   truncation's lock then lasts until that transaction ends.
-- Locking: the row of pgq.maintenance (FOR UPDATE SKIP LOCKED: never waited for; only the owner
--   can lock it, so no role that merely connects can keep maintenance busy); row locks on the
--   jobs it sweeps, promotes and carries (SKIP LOCKED); ACCESS EXCLUSIVE on one partition of
--   pgq.jobs from the grant to the end of the transaction, waited for at most 5 ms. Every
--   statement on pgq.jobs waits for that lock (a generic plan locks every partition), so call
--   it in its own transaction (autocommit): the commit follows at once. A transaction holding
--   any lock on the partition (a long report over pgq.jobs) keeps it from being truncated,
--   and the ring from turning, until it ends.
-- Errors: PQ009 at out of range, or min_interval negative or over an hour; PQ010 not READ
--   COMMITTED (TRUNCATE is not MVCC-safe: the emptiness check must see every committed row).
CREATE OR REPLACE FUNCTION pgq.maintain(at timestamptz DEFAULT NULL, min_interval interval DEFAULT NULL)
RETURNS TABLE (state text, swept int, promoted int, carried int, truncated text, rotated boolean,
               lock_wait_ms float8, bytes bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    c_slots      constant int := 4;
    c_carry      constant int := 1000;
    c_period_ms  constant bigint := 2000;
    v_now        timestamptz := coalesce(pgq._check_time(maintain.at, 'at'), now());
    v_swept      int;
    v_promoted   int;
    v_carried    int := 0;
    v_rotated    boolean := false;
    v_turn       bigint;
    v_cur        int;
    v_next       int;
    v_slot       int;
    v_target     text;
    v_n          bigint;
    v_ids        bigint[];
    v_cols       text;
    v_empty      boolean;
    v_bytes      bigint;
    v_old_wait   text;
    v_t0         timestamptz;
    v_wait       float8;
    v_state      text := 'ok';
    v_from       timestamptz;  -- the last pass over pgq.rate_starts (pgq.rate_cut_at)
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'pgq.maintain needs READ COMMITTED isolation, the transaction is %',
            current_setting('transaction_isolation')
            USING ERRCODE = 'PQ010';
    END IF;
    IF min_interval < interval '0' OR min_interval > interval '1 hour' THEN
        RAISE EXCEPTION 'min_interval must be between 0 and 1 hour, got %', min_interval
            USING ERRCODE = 'PQ009';
    END IF;
    -- A last pass in the future (the server's clock was set back) is not recent: else every
    -- call would answer 'recent' until the clock caught up.
    IF (extract(epoch FROM clock_timestamp()) * 1000)::bigint
       - (SELECT s.last_value FROM pgq.maintained_at s)
       BETWEEN 0 AND extract(epoch FROM min_interval) * 1000 - 1 THEN
        RETURN QUERY SELECT 'recent'::text, 0, 0, 0, NULL::text, false, NULL::float8, NULL::bigint;
        RETURN;
    END IF;
    PERFORM 1 FROM pgq.maintenance m FOR UPDATE SKIP LOCKED;
    IF NOT FOUND THEN
        RETURN QUERY SELECT 'busy'::text, 0, 0, 0, NULL::text, false, NULL::float8, NULL::bigint;
        RETURN;
    END IF;

    -- 1., 2.
    v_swept := pgq._sweep(NULL, v_now);
    v_promoted := pgq._promote(NULL, v_now, 10000);
    -- Rate limits: starts that left their window since the last pass (pgq.rate_cut_at: its `at`),
    -- and the second before (a claim whose transaction began before that pass but committed
    -- after it), at most the minute before each window. Under a held vacuum horizon the rows
    -- removed before stay in the index below the lower bound, so a pass reads only what it
    -- removes. Once an hour, the whole table (rows a gap in maintenance left behind).
    v_from := to_timestamp((SELECT s.last_value FROM pgq.rate_cut_at s) / 1000.0);
    IF v_from > v_now OR v_from < v_now - interval '1 minute' THEN
        v_from := v_now - interval '1 minute';  -- `at` went back, or the last pass is long ago
    END IF;
    PERFORM setval('pgq.rate_cut_at', greatest((extract(epoch FROM v_now) * 1000)::bigint, 0));
    -- One range probe of rate_starts_time_idx per rate-limited entrypoint (a lateral read: a
    -- join may hash the entrypoints and read the whole index), then the rows by TID.
    DELETE FROM pgq.rate_starts s
     WHERE s.ctid = ANY (ARRAY(
           SELECT r.ctid
             FROM pgq.entrypoints e
            CROSS JOIN LATERAL (
                  SELECT r.ctid
                    FROM pgq.rate_starts r
                   WHERE r.entrypoint = e.entrypoint
                     AND r.started_at <= v_now - e.rate_period
                     AND r.started_at > v_from - interval '1 second' - e.rate_period
                  OFFSET 0) AS r  -- (kept a probe per entrypoint: not pulled up into a join)
            WHERE e.rate_limit IS NOT NULL));
    IF abs((extract(epoch FROM v_now) * 1000)::bigint - (SELECT s.last_value FROM pgq.rate_pruned_at s)) >= 3600000 THEN
        PERFORM setval('pgq.rate_pruned_at', greatest((extract(epoch FROM v_now) * 1000)::bigint, 0));
        DELETE FROM pgq.rate_starts s
         WHERE NOT EXISTS (SELECT 1
                             FROM pgq.entrypoints e
                            WHERE e.entrypoint = s.entrypoint
                              AND e.rate_limit IS NOT NULL
                              AND s.started_at > v_now - e.rate_period);
    END IF;

    -- Slot-wide reads of one partition: a sequential scan is the cheap way (the index scans
    -- this function is set up for walk the same dead versions and visit the heap for each).
    -- The setting ends with the function.
    PERFORM set_config('enable_seqscan', 'on', true);

    -- 3. Carry forward.
    v_turn := (SELECT s.last_value FROM pgq.ring_seq s);
    v_cur := v_turn % c_slots;
    v_next := (v_cur + 1) % c_slots;
    EXECUTE format('SELECT count(*) FROM (SELECT 1 FROM pgq.%I LIMIT %s) s', 'jobs_' || v_next, c_carry + 1)
       INTO v_n;
    IF v_n BETWEEN 1 AND c_carry THEN
        EXECUTE format('SELECT array_agg(j.id) FROM (SELECT j.id FROM pgq.%I j FOR UPDATE SKIP LOCKED) j',
                       'jobs_' || v_next)
           INTO v_ids;
        IF v_ids IS NOT NULL THEN
            -- Every column but slot, as the table has them (a column added later moves too).
            SELECT string_agg(quote_ident(a.attname), ', ' ORDER BY a.attnum) INTO v_cols
              FROM pg_attribute a
             WHERE a.attrelid = 'pgq.jobs'::regclass
               AND a.attnum > 0
               AND NOT a.attisdropped
               AND a.attname <> 'slot';
            EXECUTE format('WITH moved AS (DELETE FROM pgq.%1$I j WHERE j.id = ANY ($1) RETURNING %2$s) '
                           'INSERT INTO pgq.%3$I (%2$s, slot) SELECT %2$s, $2 FROM moved',
                           'jobs_' || v_next, v_cols, 'jobs_' || v_cur)
              USING v_ids, v_cur::smallint;
            GET DIAGNOSTICS v_carried = ROW_COUNT;
        END IF;
    END IF;

    -- 4. Rotate onto a slot without pages only: a slot entered with pages left would stay full
    --    of dead versions for a whole turn of the ring.
    --    A last rotation in the future (the server's clock was set back) does not hold it up.
    IF pg_relation_size(format('pgq.jobs_%s', v_next)::regclass) = 0
       AND (extract(epoch FROM clock_timestamp()) * 1000)::bigint
           - (SELECT s.last_value FROM pgq.ring_rotated_at s) NOT BETWEEN 0 AND c_period_ms - 1 THEN
        -- The stamp first: sequences are not transactional, so whoever reads the new turn
        -- also reads its stamp. setval, not nextval: the sequence starts unused at 0, whose
        -- first nextval is 0.
        PERFORM setval('pgq.ring_rotated_at', (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
        PERFORM setval('pgq.ring_seq', v_turn + 1);
        v_rotated := true;
        v_cur := v_next;
    END IF;

    -- 5. The slot to truncate: the first non-current one (next first, then the oldest) with
    --    pages and no live row. Everything returned is computed before its lock is asked for.
    FOR v_slot IN SELECT (v_cur + k) % c_slots FROM generate_series(1, c_slots - 1) AS k ORDER BY k LOOP
        CONTINUE WHEN pg_relation_size(format('pgq.jobs_%s', v_slot)::regclass) = 0;
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM pgq.%I)', 'jobs_' || v_slot) INTO v_empty;
        IF v_empty THEN
            v_target := 'jobs_' || v_slot;
            EXIT;
        END IF;
    END LOOP;
    SELECT sum(pg_total_relation_size(format('pgq.jobs_%s', k)::regclass))::bigint INTO v_bytes
      FROM generate_series(0, c_slots - 1) AS k;
    PERFORM setval('pgq.maintained_at', (extract(epoch FROM clock_timestamp()) * 1000)::bigint);
    IF v_target IS NULL THEN
        RETURN QUERY SELECT v_state, v_swept, v_promoted, v_carried, NULL::text, v_rotated, NULL::float8, v_bytes;
        RETURN;
    END IF;

    -- The lock, waited for at most 5 ms (every call on pgq.jobs queues behind the request
    -- meanwhile), the emptiness checked again under it (a producer that drew this slot before
    -- it stopped being current may have committed since), TRUNCATE; the commit follows.
    v_old_wait := current_setting('lock_timeout');
    BEGIN
        PERFORM set_config('lock_timeout', '5ms', true);
        v_t0 := clock_timestamp();
        EXECUTE format('LOCK TABLE pgq.%I IN ACCESS EXCLUSIVE MODE', v_target);
        v_wait := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
        PERFORM set_config('lock_timeout', v_old_wait, true);
        EXECUTE format('SELECT NOT EXISTS (SELECT 1 FROM pgq.%I)', v_target) INTO v_empty;
        IF v_empty THEN
            EXECUTE format('TRUNCATE pgq.%I', v_target);
        ELSE
            v_target := NULL;
        END IF;
    EXCEPTION WHEN lock_not_available OR deadlock_detected OR object_in_use THEN
        -- The sub-block's rollback restored lock_timeout.
        v_wait := extract(epoch FROM clock_timestamp() - v_t0) * 1000;
        v_state := 'busy';
        v_target := NULL;
    END;
    RETURN QUERY SELECT v_state, v_swept, v_promoted, v_carried, v_target, v_rotated, v_wait, v_bytes;
END
$$;
COMMENT ON FUNCTION pgq.maintain(timestamptz, interval) IS
    'Stale sweep, promotion of due jobs, and the ring''s reclaim (carry stragglers, rotate, truncate one drained slot); one maintainer at a time, others answer busy; with min_interval, a call soon after the last pass answers recent.';
