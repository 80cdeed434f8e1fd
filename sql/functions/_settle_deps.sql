-- pgq._settle_deps(parent_ids, at)
-- Contract: settles the pending edges (pgq.job_deps) of jobs that have just ended (they are in
--   pgq.job_history), each edge once: a successful parent, or an edge with run_anyway, makes
--   the edge satisfied and counts the child's pgq.job_waits one down; a child whose count
--   reaches 0 (and is still waiting) moves into the ring as queued when due (pgq._enter_ring,
--   by id, behind the fence: the insert trigger tells the workers), or becomes
--   scheduled when its run_at is later, all in the caller's transaction. A dead or canceled parent makes the edge failed and cancels the child if it
--   is still waiting (pgq._archive, details {"error": "dependency failed", "parent_id",
--   "parent_status"}); the canceled children's own edges are settled the same way, level by
--   level, so a failure cancels every waiting descendant that does not run anyway.
-- Locking: the edges it settles, in (parent, child) order (a parent's edges are settled by one
--   caller only; pgq._requeue locks edges in the same order), the
--   children's job rows in id order (FOR UPDATE: two parents of one child ending at once count
--   it down one after the other; a cancel of the child waits or is waited for), with, when a
--   child is to be canceled, every waiting job below it in the same ordered pass; then their
--   pgq.job_waits rows.
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._settle_deps(parent_ids bigint[], at timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_parents  bigint[] := _settle_deps.parent_ids;
    v_edges    record;
    v_ready    bigint[];
    v_cancel   bigint[];
    v_due      record;
    v_details  jsonb[];
    v_below    bigint[];
    c_waiting  constant text := 'waiting';
BEGIN
    -- Canceled children are archived here with the settling switched off in pgq._archive; this
    -- loop settles their edges in turn (a chain of any length without nesting calls).
    PERFORM set_config('pgq.settling', 'on', true);
    WHILE cardinality(v_parents) > 0 LOOP
        -- The edges, locked in (parent, child) order first (as pgq._requeue locks them).
        PERFORM 1 FROM pgq.job_deps d
         WHERE d.parent_id = ANY (v_parents) AND d.state = 'pending'
         ORDER BY d.parent_id, d.child_id
           FOR UPDATE;
        -- The parents' ends, read by id first (a join with pgq.job_history could hash the whole
        -- history: a settlement's cost grew with it).
        WITH ended AS MATERIALIZED (
            SELECT h.id, h.status FROM pgq.job_history h WHERE h.id = ANY (v_parents)
        ), settled AS (
            UPDATE pgq.job_deps d
               SET state = CASE WHEN h.status = 'successful' OR d.run_anyway THEN 'satisfied' ELSE 'failed' END
              FROM ended h
             WHERE d.parent_id = ANY (v_parents)
               AND d.state = 'pending'
               AND h.id = d.parent_id
            RETURNING d.child_id, d.parent_id, d.state, h.status AS parent_status
        )
        SELECT array_agg(DISTINCT s.child_id) FILTER (WHERE s.state = 'satisfied') AS ok,
               array_agg(DISTINCT s.child_id) FILTER (WHERE s.state = 'failed') AS bad,
               array_agg(s.child_id) FILTER (WHERE s.state = 'satisfied') AS counts,
               jsonb_object_agg(s.child_id::text, jsonb_build_object('parent_id', s.parent_id,
                                                                     'parent_status', s.parent_status))
                   FILTER (WHERE s.state = 'failed') AS why
          INTO v_edges
          FROM settled s;
        -- The children, locked in id order, still waiting. The first time some are to be canceled,
        -- every waiting job below them too (through pending edges), in the same ordered pass:
        -- locking level by level, two settlements could each hold a job of one level that the
        -- other wants at the next, and deadlock.
        IF v_edges.bad IS NOT NULL AND v_below IS NULL THEN
            v_below := ARRAY(
                WITH RECURSIVE below (id) AS (
                    SELECT unnest(v_edges.bad)
                    UNION
                    SELECT d.child_id FROM below b JOIN pgq.job_deps d ON d.parent_id = b.id AND d.state = 'pending'
                )
                SELECT b.id FROM below b);
        END IF;
        PERFORM 1 FROM pgq.jobs j
         WHERE j.id = ANY (coalesce(v_edges.ok, '{}') || coalesce(v_edges.bad, '{}') || coalesce(v_below, '{}'))
           AND j.status = c_waiting AND j.slot = 4
         ORDER BY j.id
           FOR UPDATE;
        -- Satisfied edges count their children down; those at 0 are released.
        WITH down AS (
            UPDATE pgq.job_waits w
               SET pending = w.pending - c.n
              FROM (SELECT x.id, count(*)::int AS n FROM unnest(v_edges.counts) AS x(id) GROUP BY x.id) c
             WHERE w.child_id = ANY (v_edges.counts)  -- probed by id: a join could walk the whole
               AND w.child_id = c.id                  -- index, dead entries of every count included
            RETURNING w.child_id, w.pending
        )
        SELECT array_agg(d.child_id) INTO v_ready FROM down d WHERE d.pending = 0;
        v_cancel := ARRAY(SELECT j.id FROM pgq.jobs j
                           WHERE j.id = ANY (coalesce(v_edges.bad, '{}'))
                             AND j.status = c_waiting AND j.slot = 4
                           ORDER BY j.id);
        IF v_ready IS NOT NULL THEN
            -- Not the ones being canceled (a failed edge besides). Those due move straight into
            -- the ring as queued, found by id (a scan of the promotion index would walk the
            -- dead entries of every job promoted before, which a held horizon keeps), behind
            -- the fence of their entrypoints; those not due yet become scheduled (promoted
            -- when due, as any delayed job).
            SELECT array_agg(j.id) AS ids, array_agg(DISTINCT j.entrypoint) AS eps INTO v_due
              FROM pgq.jobs j
             WHERE j.id = ANY (v_ready) AND j.id <> ALL (v_cancel)
               AND j.status = c_waiting AND j.slot = 4
               AND j.run_at <= _settle_deps.at;
            IF v_due.ids IS NOT NULL THEN
                PERFORM pgq._enter_ring(v_due.ids, c_waiting, v_due.eps);
            END IF;
            UPDATE pgq.jobs j
               SET status = 'scheduled'
             WHERE j.id = ANY (v_ready) AND j.id <> ALL (v_cancel)
               AND j.status = c_waiting AND j.slot = 4;
            DELETE FROM pgq.job_waits w WHERE w.child_id = ANY (v_ready);
        END IF;
        EXIT WHEN cardinality(v_cancel) = 0;
        SELECT array_agg(jsonb_build_object('error', 'dependency failed') || (v_edges.why -> x.id::text) ORDER BY x.ord)
          INTO v_details
          FROM unnest(v_cancel) WITH ORDINALITY AS x(id, ord);
        PERFORM 1 FROM pgq._archive(v_cancel, array_fill('canceled'::text, ARRAY[cardinality(v_cancel)]),
                                    v_details, _settle_deps.at);
        DELETE FROM pgq.job_waits w WHERE w.child_id = ANY (v_cancel);
        v_parents := v_cancel;
    END LOOP;
    PERFORM set_config('pgq.settling', 'off', true);
END
$$;
COMMENT ON FUNCTION pgq._settle_deps(bigint[], timestamptz) IS
    'Private. Settles the edges of jobs that just ended: successes count their waiting children down and release those at 0; failures cancel waiting descendants.';
