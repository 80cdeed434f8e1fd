-- pgq.find_by_dedupe_key(dedupe_key, max_rows)
-- Contract: the jobs that carry a dedupe key, as pgq.list_jobs lists them (type
--   pgq.job_listing): the live job holding it (at most one: the key is unique among live
--   jobs) first, then finished jobs that carried it, newest first, at most max_rows rows in
--   all. A search box's answer ("where is the job of order 4711?"); the cursor column is
--   filled as in the listings, but there is no next page.
-- Locking: none (reads only). The lookups are index scans (the key in pgq.live_keys, then its
--   job by id in jobs_id_idx; job_history_dedupe_key_idx).
-- Errors: PQ009 NULL dedupe_key; PQ002 max_rows outside 1..1000.
CREATE OR REPLACE FUNCTION pgq.find_by_dedupe_key(dedupe_key text, max_rows int DEFAULT 50)
RETURNS SETOF pgq.job_listing
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Index scans: a plan made while a slot of the ring was empty (after a truncation) would
-- otherwise read the slot sequentially once it has filled (tests/py/test_plans.py).
SET enable_seqscan = off
AS $$
#variable_conflict use_column
BEGIN
    IF find_by_dedupe_key.dedupe_key IS NULL THEN
        RAISE EXCEPTION 'dedupe_key must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF find_by_dedupe_key.max_rows IS NULL OR find_by_dedupe_key.max_rows NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'max_rows must be between 1 and 1000, got %', coalesce(find_by_dedupe_key.max_rows::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;
    RETURN QUERY
    (SELECT j.id, j.entrypoint, j.status, j.priority, j.attempt, j.dedupe_key, j.enqueued_at, j.run_at,
            j.started_at, j.heartbeat_at, NULL::timestamptz, j.worker_id,
            j.errors -> -1 -> 'details' ->> 'error', j.errors -> -1 -> 'details' ->> 'message',
            CASE WHEN j.status = 'queued'
                 THEN 'q,' || j.priority || ',' || j.ready_seq
                 WHEN j.status = 'scheduled'
                 THEN 's,' || (to_json(j.run_at) #>> '{}') || ',' || j.id
                 ELSE 'r,' || j.id END,
            CASE WHEN j.status = 'running' THEN date_part('epoch', now() - j.heartbeat_at) END
       FROM pgq.jobs j
      -- The id as a value (an init plan): a look-up in jobs_id_idx whatever the slots' stats.
      WHERE j.id = (SELECT k.job_id FROM pgq.live_keys k WHERE k.dedupe_key = find_by_dedupe_key.dedupe_key))
    UNION ALL
    (SELECT h.id, h.entrypoint, h.status, h.priority, h.attempt, h.dedupe_key, h.enqueued_at, NULL::timestamptz,
            h.started_at, NULL::timestamptz, h.finished_at, h.worker_id, h.details ->> 'error', h.details ->> 'message',
            'h,' || (to_json(h.finished_at) #>> '{}') || ',' || h.id, NULL::float8
       FROM pgq.job_history h
      WHERE h.dedupe_key = find_by_dedupe_key.dedupe_key
      ORDER BY h.finished_at DESC, h.id DESC
      LIMIT find_by_dedupe_key.max_rows)
    LIMIT find_by_dedupe_key.max_rows;
END
$$;
COMMENT ON FUNCTION pgq.find_by_dedupe_key(text, int) IS
    'The jobs carrying a dedupe key: the live one first, then finished ones newest first (at most max_rows).';
