-- pgq.enqueue(entrypoint, payload, priority, run_at, dedupe_key, headers, on_conflict)
-- Contract: adds one job and returns its id; the same rules and errors as pgq.enqueue_many,
--   which it calls (one implementation for both). run_at NULL means now.
-- Locking: as pgq.enqueue_many.
-- Errors: PQ001, PQ005, PQ006, PQ007, PQ009 (see docs/errors.md).
CREATE OR REPLACE FUNCTION pgq.enqueue(
    entrypoint   text,
    payload      jsonb       DEFAULT NULL,
    priority     int         DEFAULT 0,
    run_at       timestamptz DEFAULT NULL,
    dedupe_key   text        DEFAULT NULL,
    headers      jsonb       DEFAULT NULL,
    on_conflict  text        DEFAULT 'raise'
)
RETURNS bigint
LANGUAGE sql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
    SELECT pgq.enqueue_many(ARRAY[entrypoint], ARRAY[payload], ARRAY[priority], ARRAY[run_at],
                            ARRAY[dedupe_key], ARRAY[headers], on_conflict);
$$;
COMMENT ON FUNCTION pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text) IS
    'Adds one job; returns its id. run_at NULL means now; dedupe_key is unique among live jobs (on_conflict: raise or existing).';
