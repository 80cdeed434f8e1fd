-- pgq._promote(entrypoints, at, max_rows): scheduled jobs whose run_at has come become queued.
-- Contract: moves at most max_rows jobs of the given entrypoints (NULL: every entrypoint) with
--   status 'scheduled' and run_at <= at, earliest first, from jobs_scheduled into the ring's
--   current slot as 'queued', each with a new ready number (behind the fence,
--   pgq._ready_lock), in run_at order (pgq._enter_ring: every other column kept, a move per
--   row). Rows locked by someone are skipped (SKIP LOCKED). The insert trigger tells idle
--   workers. Returns the number of jobs promoted.
-- Locking: row locks on the moved jobs.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._promote(entrypoints text[], at timestamptz, max_rows int)
RETURNS int
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
    v_due record;
    v_n   int;
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution
    -- settings); slot = 4 stays a literal: it leaves the ring's partitions out of the plan.
    c_scheduled constant text := 'scheduled';
BEGIN
    -- The earliest due jobs of each entrypoint (NULL: every one: each job's entrypoint has its
    -- row), read from jobs_scheduled_idx in (run_at, id) order, at most max_rows of each:
    -- however many jobs are due or scheduled later, a call reads at most max_rows entries per
    -- entrypoint (one read of every due job, sorted, cost a claim 100 ms with 200,000 due).
    -- slot = 4 (jobs_scheduled, where every scheduled job is: jobs_slot_check) leaves the
    -- ring's partitions out of these plans. Then those jobs locked by id, earliest first, the
    -- ones another promoter holds skipped, with the entrypoints whose fence their ready
    -- numbers need.
    SELECT array_agg(f.id ORDER BY f.run_at, f.id) INTO v_ids
      FROM (SELECT d.id, d.run_at
              FROM unnest(coalesce(_promote.entrypoints,
                                   ARRAY(SELECT e.entrypoint FROM pgq.entrypoints e))) AS e(name)
             CROSS JOIN LATERAL (
                   SELECT j.id, j.run_at
                     FROM pgq.jobs j
                    WHERE j.entrypoint = e.name
                      AND j.status = 'scheduled' AND j.slot = 4
                      AND j.run_at <= _promote.at
                    ORDER BY j.run_at, j.id
                    LIMIT _promote.max_rows) AS d
             ORDER BY d.run_at, d.id
             LIMIT _promote.max_rows) AS f;
    IF v_ids IS NULL THEN
        RETURN 0;
    END IF;
    SELECT array_agg(d.id ORDER BY d.run_at, d.id) AS ids, array_agg(DISTINCT d.entrypoint) AS eps
      INTO v_due
      FROM (SELECT j.id, j.entrypoint, j.run_at
              FROM pgq.jobs j
             WHERE j.id = ANY (v_ids)
               AND j.status = c_scheduled AND j.slot = 4
               FOR UPDATE SKIP LOCKED) d;
    IF v_due.ids IS NULL THEN
        RETURN 0;
    END IF;
    v_n := pgq._enter_ring(v_due.ids, c_scheduled, v_due.eps);
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq._promote(text[], timestamptz, int) IS
    'Private. Moves due scheduled jobs into the ring as queued, with ready numbers in run_at order.';
