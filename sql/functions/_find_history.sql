-- pgq._find_history(entrypoint, statuses, since, until, error, after_at, after_id, n,
--                   requeueable)
-- Contract: the history rows matching a filter, newest first (finished_at desc, id desc), at
--   most n, strictly after the keyset position (after_at, after_id) when given (keyset paging,
--   no OFFSET). Filter: entrypoint (NULL: all), status among statuses, finished_at in
--   [since, until) (NULL: open), error (NULL: any) found case-insensitively in the details'
--   error, message or traceback (or the details themselves when they are a JSON string).
--   requeueable: leave out rows whose dedupe key a live job holds (in pgq.live_keys: they
--   cannot be requeued).
--   Planned for each call's values (so a status filter of 'failed' uses the failed-jobs index).
--   Arguments are checked by the callers.
-- Locking: none (reads only).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._find_history(
    entrypoint   text,
    statuses     text[],
    since        timestamptz,
    until        timestamptz,
    error        text,
    after_at     timestamptz,
    after_id     bigint,
    n            int,
    requeueable  boolean
)
RETURNS SETOF pgq.job_history
LANGUAGE plpgsql
STABLE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_custom_plan
AS $$
#variable_conflict use_column
BEGIN
    RETURN QUERY
    SELECT h.*
      FROM pgq.job_history h
     WHERE (_find_history.entrypoint IS NULL OR h.entrypoint = _find_history.entrypoint)
       AND h.status = ANY (_find_history.statuses)
       AND (_find_history.since IS NULL OR h.finished_at >= _find_history.since)
       AND (_find_history.until IS NULL OR h.finished_at < _find_history.until)
       AND (_find_history.after_at IS NULL
            OR (h.finished_at <= _find_history.after_at
                AND (h.finished_at, h.id) < (_find_history.after_at, _find_history.after_id)))
       AND (_find_history.error IS NULL
            OR strpos(lower(concat_ws(' ', h.details ->> 'error', h.details ->> 'message', h.details ->> 'traceback',
                                      CASE WHEN jsonb_typeof(h.details) = 'string' THEN h.details #>> '{}' END)),
                      lower(_find_history.error)) > 0)
       AND (NOT _find_history.requeueable
            OR h.dedupe_key IS NULL
            OR NOT EXISTS (SELECT 1 FROM pgq.live_keys k WHERE k.dedupe_key = h.dedupe_key))
     ORDER BY h.finished_at DESC, h.id DESC
     LIMIT _find_history.n;
END
$$;
COMMENT ON FUNCTION pgq._find_history(text, text[], timestamptz, timestamptz, text, timestamptz, bigint, int, boolean) IS
    'Private. History rows matching entrypoint, statuses, finished_at range and error text, newest first, keyset-paged.';
