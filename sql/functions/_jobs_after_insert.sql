-- pgq._jobs_after_insert(): statement-level AFTER INSERT trigger on pgq.jobs.
-- Contract: registers every new entrypoint in pgq.entrypoints with the default policy, then
--   sends {"kind": "enqueued", "entrypoints": [...]} naming the entrypoints that got queued jobs.
--   Never carries payload data (any role may LISTEN).
-- Locking: a first-time entrypoint briefly holds its new pgq.entrypoints key until commit.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._jobs_after_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps jsonb;
BEGIN
    INSERT INTO pgq.entrypoints (entrypoint)
    SELECT DISTINCT n.entrypoint FROM new_rows n
    ON CONFLICT (entrypoint) DO NOTHING;

    SELECT jsonb_agg(DISTINCT n.entrypoint) INTO v_eps
      FROM new_rows n
     WHERE n.status = 'queued';
    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_insert() IS
    'Private trigger: registers new entrypoints and sends {"kind":"enqueued"} on pgq_events.';
