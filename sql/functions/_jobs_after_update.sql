-- pgq._jobs_after_update(): statement-level AFTER UPDATE trigger on pgq.jobs.
-- Contract: when a statement puts running jobs back in the queue (retry, release), sends
--   {"kind": "enqueued", "entrypoints": [...]} for jobs due now, and {"kind": "scheduled",
--   "entrypoints": [...]} for jobs due later (a retry after its backoff: workers ask
--   pgq.next_run_at when to look, rather than wake now and claim nothing); when it flags
--   running jobs for cancellation, sends {"kind": "cancel", "ids": [...]}. Claims and
--   heartbeats (rows left running, no new cancel flag) return after one scan of the
--   transition table and send nothing. A promotion of scheduled jobs that became due is a
--   DELETE and an INSERT (pgq._promote), never an UPDATE: the insert trigger announces it.
-- Locking: none.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._jobs_after_update()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps   jsonb;
    v_later jsonb;
    v_ids   jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.status <> 'running' OR n.cancel_requested) THEN
        RETURN NULL;
    END IF;

    SELECT jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'queued' AND o.status <> 'queued'),
           jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'scheduled' AND o.status = 'running'),
           jsonb_agg(n.id ORDER BY n.id) FILTER (WHERE n.cancel_requested AND NOT o.cancel_requested)
      INTO v_eps, v_later, v_ids
      FROM new_rows n
      JOIN old_rows o ON o.id = n.id;

    PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    PERFORM pgq._notify('scheduled', 'entrypoints', v_later);
    IF v_ids IS NOT NULL THEN
        PERFORM pgq._notify('cancel', 'ids', v_ids);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_update() IS
    'Private trigger: notifies pgq_events when jobs become runnable again or are flagged for cancellation.';
