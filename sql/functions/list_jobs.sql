-- pgq.list_jobs(entrypoint, state, after, page_size)
-- Contract: one page of the jobs of one entrypoint in one state, with keyset paging (pass the
--   cursor column of the last row as `after` for the next page; never OFFSET):
--   - queued: jobs due, in claim order (priority desc, then ready order), read from the claim
--     index;
--   - scheduled: jobs not due yet, by due time (run_at, id);
--   - running: by id;
--   - successful, failed, canceled: newest first (finished_at desc, id desc), as
--     pgq.find_history.
--   Columns: the job's id, entrypoint, status, priority, attempt, dedupe_key, enqueued_at,
--   run_at (live jobs), started_at, heartbeat_at (running jobs), finished_at (history),
--   worker_id, error and message (the last failure's details->>'error' / ->>'message': from the
--   error list of a live job, from details of a finished one), cursor, silent_s (a running
--   job: seconds since its last heartbeat, before the timeout makes it stale; else NULL). Payloads are left out:
--   pgq.job(id) has everything about one job.
-- Locking: none (reads only).
-- Errors: PQ001 bad entrypoint; PQ009 unknown state, a bad cursor (or one of another state);
--   PQ002 page_size outside 1..1000.
CREATE OR REPLACE FUNCTION pgq.list_jobs(
    entrypoint  text,
    state       text,
    after       text DEFAULT NULL,
    page_size   int  DEFAULT 50
)
RETURNS SETOF pgq.job_listing
LANGUAGE plpgsql
STABLE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_custom_plan
-- Index scans: a plan made while a slot of the ring was empty (after a truncation) would
-- otherwise read the slot sequentially once it has filled (tests/py/test_plans.py).
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_after record;
BEGIN
    PERFORM pgq._check_name(list_jobs.entrypoint, 'entrypoint', 'PQ001');
    IF list_jobs.state IS NULL OR list_jobs.state NOT IN ('scheduled', 'queued', 'running', 'successful', 'failed', 'canceled') THEN
        RAISE EXCEPTION 'state must be scheduled, queued, running, successful, failed or canceled, got %',
            coalesce(quote_literal(list_jobs.state), 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF list_jobs.page_size IS NULL OR list_jobs.page_size NOT BETWEEN 1 AND 1000 THEN
        RAISE EXCEPTION 'page_size must be between 1 and 1000, got %', coalesce(list_jobs.page_size::text, 'NULL')
            USING ERRCODE = 'PQ002';
    END IF;

    IF list_jobs.state IN ('successful', 'failed', 'canceled') THEN
        RETURN QUERY
        SELECT f.*
          FROM pgq.find_history(list_jobs.entrypoint, ARRAY[list_jobs.state], NULL, NULL, NULL,
                                list_jobs.after, list_jobs.page_size) AS f;
        RETURN;
    END IF;

    SELECT * INTO v_after FROM pgq._cursor(list_jobs.after, CASE list_jobs.state WHEN 'queued' THEN 'q' WHEN 'scheduled' THEN 's' ELSE 'r' END);
    RETURN QUERY
    WITH page AS (
        -- queued, first page
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
          ORDER BY j.priority DESC, j.ready_seq
          LIMIT list_jobs.page_size)
        UNION ALL
        -- queued, next pages: the rest of the cursor's priority, then lower priorities; each
        -- part starts where the cursor is in the claim index
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NOT NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
            AND j.priority = v_after.priority AND j.ready_seq > v_after.id
          ORDER BY j.ready_seq
          LIMIT list_jobs.page_size)
        UNION ALL
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'queued' AND v_after.id IS NOT NULL
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'queued'
            AND j.priority < v_after.priority
          ORDER BY j.priority DESC, j.ready_seq
          LIMIT list_jobs.page_size)
        UNION ALL
        (SELECT j.*
           FROM pgq.jobs j
          WHERE list_jobs.state = 'scheduled'
            AND j.entrypoint = list_jobs.entrypoint AND j.status = 'scheduled' AND j.slot = 4
            AND (v_after.id IS NULL OR (j.run_at, j.id) > (v_after.at, v_after.id))
          ORDER BY j.run_at, j.id
          LIMIT list_jobs.page_size)
        UNION ALL
        -- running: read through the running index (OFFSET 0 keeps the ORDER BY out of the scan,
        -- which could otherwise walk jobs_id_idx in id order), then sorted
        (SELECT r.*
           FROM (SELECT j.*
                   FROM pgq.jobs j
                  WHERE list_jobs.state = 'running'
                    AND j.entrypoint = list_jobs.entrypoint AND j.status = 'running'
                    AND (v_after.id IS NULL OR j.id > v_after.id)
                 OFFSET 0) AS r
          ORDER BY r.id
          LIMIT list_jobs.page_size)
    )
    SELECT p.id, p.entrypoint, p.status, p.priority, p.attempt, p.dedupe_key, p.enqueued_at, p.run_at,
           p.started_at, p.heartbeat_at, NULL::timestamptz, p.worker_id,
           p.errors -> -1 -> 'details' ->> 'error', p.errors -> -1 -> 'details' ->> 'message',
           CASE WHEN p.status = 'queued'
                THEN 'q,' || p.priority || ',' || p.ready_seq
                WHEN p.status = 'scheduled'
                THEN 's,' || (to_json(p.run_at) #>> '{}') || ',' || p.id
                ELSE 'r,' || p.id END,
           CASE WHEN p.status = 'running' THEN date_part('epoch', now() - p.heartbeat_at) END
      FROM page p
     ORDER BY CASE WHEN p.status = 'queued' THEN -p.priority END, CASE WHEN p.status = 'queued' THEN p.ready_seq END,
              CASE WHEN p.status = 'scheduled' THEN p.run_at END, p.id
     LIMIT list_jobs.page_size;
END
$$;
COMMENT ON FUNCTION pgq.list_jobs(text, text, text, int) IS
    'One page of the jobs of an entrypoint in a state (queued in claim order, scheduled by due time, running by id, finished newest first), keyset-paged through the cursor column.';
