-- pgq.cancel(ids, at)
-- Contract: queued jobs move to history as canceled at once; running jobs are flagged
--   (cancel_requested) and their worker is told through pgq_events ({"kind": "cancel"}) and
--   through the next heartbeat answer; the worker then completes them as canceled (or the claim
--   path archives them once their heartbeat goes stale). Returns the ids canceled or flagged
--   (one column, id);
--   ids that are unknown or already finished are ignored. Calling it again is harmless.
--   at NULL means now().
-- Locking: row locks on the affected jobs; waits for a transaction that holds one of them.
-- Errors: PQ009 NULL ids or NULL element.
CREATE OR REPLACE FUNCTION pgq.cancel(ids bigint[], at timestamptz DEFAULT NULL)
RETURNS TABLE (id bigint)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_queued bigint[];
BEGIN
    PERFORM pgq._check_dims(cancel.ids, 'ids');
    PERFORM pgq._check_time(cancel.at, 'at');
    IF cancel.ids IS NULL OR array_position(cancel.ids, NULL) IS NOT NULL THEN
        RAISE EXCEPTION 'ids must be an array without NULLs, got %', coalesce(cancel.ids::text, 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;

    SELECT array_agg(l.id) INTO v_queued
      FROM (SELECT j.id FROM pgq.jobs j
             WHERE j.id = ANY (cancel.ids) AND j.status IN ('queued', 'scheduled')
             ORDER BY j.id
               FOR UPDATE) AS l;
    IF v_queued IS NOT NULL THEN
        RETURN QUERY SELECT a.id
                       FROM pgq._archive(v_queued, array_fill('canceled'::text, ARRAY[cardinality(v_queued)]),
                                         NULL, coalesce(cancel.at, now())) AS a;
    END IF;

    RETURN QUERY
    UPDATE pgq.jobs j
       SET cancel_requested = true
     WHERE j.id = ANY (cancel.ids)
       AND j.status = 'running'
    RETURNING j.id;
END
$$;
COMMENT ON FUNCTION pgq.cancel(bigint[], timestamptz) IS
    'Cancels jobs: queued ones go to history as canceled, running ones are flagged and their worker notified. Returns the ids affected.';
