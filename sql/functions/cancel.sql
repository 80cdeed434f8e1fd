-- pgq.cancel(ids, at)
-- Contract: queued and scheduled jobs move to history as canceled at once (their dedupe keys
--   are free again); running jobs are flagged
--   (cancel_requested) and their worker is told through pgq_events ({"kind": "cancel"}) and
--   through the next heartbeat answer; the worker then completes them as canceled (or the claim
--   path archives them once their heartbeat goes stale). Returns the ids canceled or flagged
--   (one column, id);
--   ids that are unknown or already finished are ignored. Calling it again is harmless.
--   at NULL means now(). A job carried to another slot of the ring while the call waited for it
--   (pgq.maintain) is found again by a second look.
-- Locking: row locks on the affected jobs, taken in id order; waits for a transaction that
--   holds one of them.
-- Errors: PQ009 NULL ids or NULL element.
CREATE OR REPLACE FUNCTION pgq.cancel(ids bigint[], at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans, so that the status variable below stays a parameter (a custom plan would put
-- its value in, and could then scan a whole partial index, as described there).
SET plan_cache_mode = force_generic_plan
-- Index scans by id (jobs_id_idx): a generic plan made while a partition was empty would
-- otherwise scan it sequentially once per job after it has filled.
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_running constant text := 'running';
    v_queued  bigint[];
    v_running bigint[];
    v_flagged bigint[];
    v_done    bigint[] := '{}';
    v_look   int;
BEGIN
    PERFORM pgq._check_dims(cancel.ids, 'ids');
    PERFORM pgq._check_time(cancel.at, 'at');
    IF cancel.ids IS NULL OR array_position(cancel.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(cancel.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    -- Unknown and finished ids miss twice. Each look locks its jobs in one read, in id order,
    -- whatever their status and slot (docs/architecture.md#leases-and-zombie-fencing).
    FOR v_look IN 1..2 LOOP  -- look twice: docs/architecture.md#look-twice
        SELECT array_agg(l.id ORDER BY l.id) FILTER (WHERE l.status <> c_running),
               array_agg(l.id ORDER BY l.id) FILTER (WHERE l.status = c_running)
          INTO v_queued, v_running
          FROM (SELECT j.id, j.status FROM pgq.jobs j
                 WHERE j.id = ANY (cancel.ids)
                   AND j.id <> ALL (v_done)
                 ORDER BY j.id
                   FOR UPDATE) AS l;
        IF v_queued IS NOT NULL THEN
            -- Queued and scheduled: to history as canceled; _archive frees their dedupe keys.
            RETURN QUERY SELECT a.id
                           FROM pgq._archive(v_queued, array_fill('canceled'::text, ARRAY[cardinality(v_queued)]),
                                             NULL, coalesce(cancel.at, now())) AS a;
            v_done := v_done || v_queued;
            -- Workflows: a waiting job canceled here has no count left to keep (its row is
            -- locked by the read above, as a parent's settlement locks it before its count).
            IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
                DELETE FROM pgq.job_waits w WHERE w.child_id = ANY (v_queued);
            END IF;
        END IF;

        IF v_running IS NOT NULL THEN
            WITH flagged AS (
                UPDATE pgq.jobs j
                   SET cancel_requested = true
                 WHERE j.id = ANY (v_running)
                   AND j.status = c_running AND j.slot <> 4
                RETURNING j.id
            )
            SELECT array_agg(f.id) INTO v_flagged FROM flagged f;
            IF v_flagged IS NOT NULL THEN
                RETURN QUERY SELECT unnest(v_flagged);
                v_done := v_done || v_flagged;
            END IF;
        END IF;
        EXIT WHEN cardinality(v_done) >= cardinality(cancel.ids);
    END LOOP;
END
$$;
COMMENT ON FUNCTION pgq.cancel(bigint[], timestamptz) IS
    'Cancels jobs: queued ones go to history as canceled, running ones are flagged and their worker notified. Returns the ids affected.';
