-- pgq._jobs_after_insert(): statement-level AFTER INSERT trigger on pgq.jobs.
-- Contract: registers every new entrypoint in pgq.entrypoints with the default policy (at most
--   100 new ones per statement, so one producer call cannot flood the policy table, the
--   notifications and pgq.queue_stats), opens the lane (entrypoint, priority) of every new job
--   (pgq._add_lanes, at most 100 new ones per statement), then
--   sends {"kind": "enqueued", "entrypoints": [...]} naming the entrypoints that got jobs due
--   now, and {"kind": "scheduled", "entrypoints": [...]} naming those that got jobs due later
--   (a worker then asks pgq.next_run_at when to look, instead of claiming nothing now).
--   Never carries payload data (any role may LISTEN).
--   Every job's entrypoint row exists whenever its lane does (they are made together here and
--   removed together by pgq.prune_entrypoints), so one probe of pgq.lanes tells whether
--   anything is new; only then does the trigger write. This is where a job's entrypoint name
--   and priority are checked (pgq.jobs has no CHECK constraint on them: it would be prepared
--   again by every statement writing the table): the new pair's rows must pass
--   entrypoints_entrypoint_check (pgq._valid_name) and lanes_priority_check, else the
--   statement fails (23514) and adds nothing.
-- Locking: ROW EXCLUSIVE on pgq.entrypoints until commit, always (pgq.prune_entrypoints takes
--   SHARE ROW EXCLUSIVE: it waits for the transactions enqueueing now, and they for it, so no
--   job is added for an entrypoint row being removed). A first-time entrypoint briefly holds its
--   new pgq.entrypoints key until commit.
-- Errors: PQ001 more than 100 new entrypoints, PQ005 more than 100 new lanes in one statement
--   (the statement adds nothing).
CREATE OR REPLACE FUNCTION pgq._jobs_after_insert()
RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, pgq, pg_temp
AS $$
DECLARE
    v_eps   jsonb;
    v_later jsonb;
    v_new   bigint;
BEGIN
    LOCK TABLE pgq.entrypoints IN ROW EXCLUSIVE MODE;
    IF EXISTS (SELECT 1
                 FROM (SELECT DISTINCT n.entrypoint, n.priority FROM new_rows n) l
                WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes x
                                   WHERE x.entrypoint = l.entrypoint AND x.priority = l.priority)) THEN
        WITH added AS (
            INSERT INTO pgq.entrypoints (entrypoint)
            SELECT DISTINCT n.entrypoint FROM new_rows n
            ON CONFLICT (entrypoint) DO NOTHING
            RETURNING 1
        )
        SELECT count(*) INTO v_new FROM added;
        IF v_new > 100 THEN
            RAISE EXCEPTION 'one statement may register at most 100 new entrypoints, this one registers %', v_new
                USING ERRCODE = 'PQ001',
                      HINT = 'Enqueue jobs of many new entrypoints in several calls, or configure the entrypoints first.';
        END IF;

        -- The missing lanes of the new jobs. Scheduled jobs too: the cap on new lanes is met
        -- by the producer, never by a later promotion.
        PERFORM pgq._add_lanes(array_agg(l.entrypoint), array_agg(l.priority))
           FROM (SELECT DISTINCT n.entrypoint, n.priority FROM new_rows n) l
               WHERE NOT EXISTS (SELECT 1 FROM pgq.lanes x WHERE x.entrypoint = l.entrypoint AND x.priority = l.priority)
        HAVING count(*) > 0;
    END IF;

    SELECT jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'queued'),
           jsonb_agg(DISTINCT n.entrypoint) FILTER (WHERE n.status = 'scheduled')
      INTO v_eps, v_later
      FROM new_rows n;
    IF v_eps IS NOT NULL THEN
        PERFORM pgq._notify('enqueued', 'entrypoints', v_eps);
    END IF;
    IF v_later IS NOT NULL THEN
        PERFORM pgq._notify('scheduled', 'entrypoints', v_later);
    END IF;
    RETURN NULL;
END
$$;
COMMENT ON FUNCTION pgq._jobs_after_insert() IS
    'Private trigger: registers new entrypoints and sends {"kind":"enqueued"} (due now) or {"kind":"scheduled"} (due later) on pgq_events.';
