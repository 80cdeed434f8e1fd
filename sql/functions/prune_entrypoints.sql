-- pgq.prune_entrypoints(older_than, lock_wait, at)
-- Contract: removes the rows of pgq.entrypoints nobody needs: no live job, no schedule naming
--   the entrypoint, not paused, the default policy (never configured, or reset), and not
--   changed for older_than. Such a row carries nothing but the defaults: the next enqueue of
--   that entrypoint creates it again, and history rows keep their entrypoint name. Its lanes
--   (pgq.lanes) go with it and their cursor sequences are dropped (the next enqueue creates
--   them again, starting from nothing settled). Returns the
--   number of rows removed, or NULL when it could not take its lock within lock_wait (0: 1 ms)
--   and removed nothing. at NULL means now().
-- Locking: SHARE ROW EXCLUSIVE on pgq.entrypoints until commit, waited for at most lock_wait:
--   it waits for transactions that are enqueueing right now (they hold ROW EXCLUSIVE from the
--   insert trigger until they commit), and enqueues and configure calls wait for it, so a job
--   can never be added for an entrypoint row being removed. Claims are not blocked. ACCESS
--   EXCLUSIVE on the dropped cursor sequences until commit.
-- Errors: PQ008 older_than outside 0..36500 days, lock_wait outside 0..1 minute; PQ009 at out
--   of range.
CREATE OR REPLACE FUNCTION pgq.prune_entrypoints(
    older_than  interval    DEFAULT interval '1 day',
    lock_wait   interval    DEFAULT interval '100 milliseconds',
    at          timestamptz DEFAULT NULL
)
RETURNS bigint
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_now      timestamptz := coalesce(pgq._check_time(prune_entrypoints.at, 'at'), now());
    v_old_wait text := current_setting('lock_timeout');
    v_gone     text[];
    v_seq      text;
BEGIN
    IF prune_entrypoints.older_than IS NULL OR prune_entrypoints.lock_wait IS NULL THEN
        RAISE EXCEPTION 'older_than and lock_wait must not be NULL' USING ERRCODE = 'PQ008';
    END IF;
    PERFORM pgq._check_interval(prune_entrypoints.older_than, 'older_than', interval '0', interval '36500 days');
    PERFORM pgq._check_interval(prune_entrypoints.lock_wait, 'lock_wait', interval '0', interval '1 minute');
    BEGIN
        PERFORM set_config('lock_timeout',
            greatest(1, ceil(extract(epoch FROM prune_entrypoints.lock_wait) * 1000))::bigint::text, true);
        LOCK TABLE pgq.entrypoints IN SHARE ROW EXCLUSIVE MODE;
        PERFORM set_config('lock_timeout', v_old_wait, true);
    EXCEPTION WHEN lock_not_available THEN
        RETURN NULL;
    END;
    WITH gone AS (
    DELETE FROM pgq.entrypoints e
     WHERE e.updated_at < v_now - prune_entrypoints.older_than
       AND e.paused_at IS NULL
       -- The column defaults of pgq.entrypoints (0001): nothing was configured.
       AND e.concurrency_limit IS NULL
       AND e.max_attempts = 5
       AND e.backoff_base = interval '1 second'
       AND e.backoff_max = interval '5 minutes'
       AND e.heartbeat_timeout = interval '30 seconds'
       AND e.dedupe_period = interval '0'
       AND e.key_concurrency_limit IS NULL
       AND NOT EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.entrypoint = e.entrypoint)
       AND NOT EXISTS (SELECT 1 FROM pgq.schedules s WHERE s.entrypoint = e.entrypoint)
    RETURNING e.entrypoint
    )
    SELECT array_agg(d.entrypoint) INTO v_gone FROM gone d;
    IF v_gone IS NULL THEN
        RETURN 0;
    END IF;
    -- Their lanes go too, with the cursor and turn sequences (the next enqueue creates them again).
    FOR v_seq IN
        WITH lanes AS (DELETE FROM pgq.lanes l WHERE l.entrypoint = ANY (v_gone) RETURNING l.cursor_seq, l.turn_seq)
        SELECT format('%I.%I', n.nspname, c.relname)
          FROM lanes l
          CROSS JOIN LATERAL (VALUES (l.cursor_seq), (l.turn_seq)) AS s(seq)
          JOIN pg_class c ON c.oid = s.seq
          JOIN pg_namespace n ON n.oid = c.relnamespace
    LOOP
        EXECUTE 'DROP SEQUENCE ' || v_seq;
    END LOOP;
    RETURN cardinality(v_gone);
END
$$;
COMMENT ON FUNCTION pgq.prune_entrypoints(interval, interval, timestamptz) IS
    'Removes entrypoint rows with no live job, no schedule, the default policy, not paused and unchanged for older_than; returns how many (NULL: lock not taken within lock_wait).';
