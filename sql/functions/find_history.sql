-- pgq.find_history(entrypoint, statuses, since, until, error, after, page_size)
-- Contract: finished jobs matching a filter, newest first (finished_at desc, id desc), one page
--   of at most page_size rows: dead jobs by default (statuses '{failed}'), of one entrypoint
--   (NULL: all), finished in [since, until) (NULL: open), whose error, message or traceback
--   contains the text `error` (case-insensitive; NULL: any). Keyset paging: pass the cursor
--   column of the last row as `after` to get the next page (never OFFSET). error and message
--   are the last failure's details->>'error' and details->>'message'. The same filter drives
--   pgq.requeue_history and pgq.delete_history.
-- Locking: none (reads only).
-- Errors: PQ001 bad entrypoint; PQ009 statuses NULL, empty or not among successful, failed,
--   canceled, since after until, a bad cursor; PQ002 page_size outside 1..1000.
CREATE OR REPLACE FUNCTION pgq.find_history(
    entrypoint  text        DEFAULT NULL,
    statuses    text[]      DEFAULT '{failed}',
    since       timestamptz DEFAULT NULL,
    until       timestamptz DEFAULT NULL,
    error       text        DEFAULT NULL,
    after       text        DEFAULT NULL,
    page_size   int         DEFAULT 50
)
RETURNS SETOF pgq.job_listing
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_after record;
BEGIN
    PERFORM pgq._check_history_filter(find_history.entrypoint, find_history.statuses, find_history.since,
                                      find_history.until, find_history.page_size, 1000, 'page_size');
    SELECT * INTO v_after FROM pgq._cursor(find_history.after, 'h');
    RETURN QUERY
    SELECT h.id, h.entrypoint, h.status, h.priority, h.attempt, h.dedupe_key, h.enqueued_at, NULL::timestamptz,
           h.started_at, NULL::timestamptz, h.finished_at, h.worker_id, h.details ->> 'error', h.details ->> 'message',
           'h,' || (to_json(h.finished_at) #>> '{}') || ',' || h.id, NULL::float8
      FROM pgq._find_history(find_history.entrypoint, find_history.statuses, find_history.since,
                             find_history.until, find_history.error, v_after.at, v_after.id,
                             find_history.page_size, false) AS h;
END
$$;
COMMENT ON FUNCTION pgq.find_history(text, text[], timestamptz, timestamptz, text, text, int) IS
    'Finished jobs (failed by default) by entrypoint, finish time and error text, newest first, keyset-paged through the cursor column.';
