-- pgq._jobs_after_delete(): statement-level AFTER DELETE trigger on pgq.jobs.
-- Contract: when running jobs of an entrypoint with a concurrency limit or a per-key limit
--   (key_concurrency_limit) leave the table, a slot is free again: sends {"kind": "enqueued", "entrypoints": [...]} so waiting workers claim at
--   once instead of at their next poll. Unlimited entrypoints send nothing.
-- Locking: none.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._jobs_after_delete()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps jsonb;
BEGIN
    SELECT jsonb_agg(c.entrypoint) INTO v_eps
      FROM pgq.entrypoints c
     WHERE (c.concurrency_limit IS NOT NULL OR c.key_concurrency_limit IS NOT NULL)
       AND c.entrypoint IN (SELECT o.entrypoint FROM old_rows o WHERE o.status = 'running');
    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_delete() IS
    'Private trigger: notifies pgq_events when a running job of a concurrency- or key-limited entrypoint leaves.';
