-- pgq._jobs_after_update(): statement-level AFTER UPDATE trigger on pgq.jobs.
-- Contract: when a statement puts running jobs back in the queue (retry, release), sends
--   {"kind": "enqueued", "entrypoints": [...]}; when it flags running jobs for cancellation,
--   sends {"kind": "cancel", "ids": [...]}. Claims and heartbeats (rows left running, no new
--   cancel flag) return after one scan of the transition table and send nothing.
-- Locking: none.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._jobs_after_update()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps jsonb;
    v_ids jsonb;
BEGIN
    IF NOT EXISTS (SELECT 1 FROM new_rows n WHERE n.status = 'queued' OR n.cancel_requested) THEN
        RETURN NULL;
    END IF;

    SELECT jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'queued' AND o.status = 'running'),
           jsonb_agg(n.id ORDER BY n.id) FILTER (WHERE n.cancel_requested AND NOT o.cancel_requested)
      INTO v_eps, v_ids
      FROM new_rows n
      JOIN old_rows o ON o.id = n.id;

    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    IF v_ids IS NOT NULL THEN
        PERFORM pgq._notify('cancel', 'ids', v_ids);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_update() IS
    'Private trigger: notifies pgq_events when jobs become runnable again or are flagged for cancellation.';
