-- pgq._add_deps(ids, depends_on)
-- Contract: the dependencies of jobs being enqueued by pgq.enqueue_many (ids: their new ids in
--   input order, not inserted yet). depends_on is a JSON array with one element per job: null
--   or [] (none), or an array of references, each a number (the 1-based position of an earlier
--   job of the same call), {"position": n} or {"job": id} (a job enqueued before, live or
--   finished), with "run_anyway": true to run even when that parent ends dead or canceled.
--   A job may only depend on jobs before it in the call, so a graph is acyclic by
--   construction. Writes the edges (pgq.job_deps: pending for a parent not ended, satisfied for
--   one that succeeded or ended otherwise with run_anyway, failed for a dead or canceled one),
--   all in one workflow: the oldest workflow of the jobs named by id (a named job in none
--   counts as one of its own, its id), else the id of the call's first job that has an edge
--   and, per job that waits, its count of pending edges (pgq.job_waits). Answers the jobs that
--   wait (to be inserted as 'waiting') and those to cancel at once (a parent already dead or
--   canceled, without run_anyway).
-- Locking: FOR KEY SHARE on the live parents named by id, to the end of the transaction: a
--   parent cannot end (its row is deleted when it does) before these edges are committed, so
--   its end settles them; a parent that ended before is found in pgq.job_history.
-- Errors: PQ003 depends_on of another length; PQ009 depends_on not a JSON array, an element
--   not an array, a reference that is not a position before the job or {"job": id}, a job
--   that does not exist, more than 10,000 references in one call.
CREATE OR REPLACE FUNCTION pgq._add_deps(ids bigint[], depends_on jsonb,
                                         OUT waiting bigint[], OUT cancel bigint[])
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
SET plan_cache_mode = force_generic_plan
SET jit = off
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_n    int := cardinality(_add_deps.ids);
    v_bad    record;
    v_wf     bigint;
    v_pos    int[];      -- per reference: the position of the job that depends
    v_ref    jsonb[];    --   the reference as given
    v_ppos   int[];      --   the parent's position in this call, or
    v_named  bigint[];   --   the parent's id (a job enqueued before)
    v_any    boolean[];  --   run_anyway
    v_parent bigint[];   --   the parent's id, either way
    v_child  bigint[];   --   the child's id
    v_live   bigint[];   -- named parents that are live (locked)
BEGIN
    IF jsonb_typeof(_add_deps.depends_on) IS DISTINCT FROM 'array' THEN
        RAISE EXCEPTION 'depends_on must be a JSON array (element i for job i) or NULL, got %',
            coalesce(jsonb_typeof(_add_deps.depends_on), 'NULL')
            USING ERRCODE = 'PQ009';
    END IF;
    IF jsonb_array_length(_add_deps.depends_on) <> v_n THEN
        RAISE EXCEPTION 'depends_on has % elements but entrypoints has %', jsonb_array_length(_add_deps.depends_on), v_n
            USING ERRCODE = 'PQ003';
    END IF;
    -- Every reference, parsed into parallel arrays (one element per reference; no temporary
    -- table: creating one per call writes the catalogs, which bloat under a held horizon): a
    -- number or {"position": n} is a job of this call, {"job": id} one enqueued before.
    SELECT coalesce(array_agg(e.pos ORDER BY e.pos, r.ord), '{}'),
           coalesce(array_agg(r.ref ORDER BY e.pos, r.ord), '{}'),
           coalesce(array_agg(CASE WHEN jsonb_typeof(r.ref) = 'number' AND r.ref::text ~ '^[0-9]{1,9}$' THEN r.ref::text::int
                                   WHEN jsonb_typeof(r.ref -> 'position') = 'number' AND (r.ref ->> 'position') ~ '^[0-9]{1,9}$'
                                        THEN (r.ref ->> 'position')::int END ORDER BY e.pos, r.ord), '{}'),
           coalesce(array_agg(CASE WHEN jsonb_typeof(r.ref -> 'job') = 'number' AND (r.ref ->> 'job') ~ '^[0-9]{1,18}$'
                                   THEN (r.ref ->> 'job')::bigint END ORDER BY e.pos, r.ord), '{}'),
           coalesce(array_agg(coalesce(jsonb_typeof(r.ref -> 'run_anyway') = 'boolean' AND (r.ref ->> 'run_anyway')::boolean, false)
                              ORDER BY e.pos, r.ord), '{}')
      INTO v_pos, v_ref, v_ppos, v_named, v_any
      FROM jsonb_array_elements(_add_deps.depends_on) WITH ORDINALITY AS e(deps, pos)
     CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(e.deps) = 'array' THEN e.deps ELSE '[]' END)
                        WITH ORDINALITY AS r(ref, ord);
    SELECT e.pos, jsonb_typeof(e.deps) AS kind INTO v_bad
      FROM jsonb_array_elements(_add_deps.depends_on) WITH ORDINALITY AS e(deps, pos)
     WHERE jsonb_typeof(e.deps) NOT IN ('array', 'null')
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'depends_on at position % must be an array of references or null, got %', v_bad.pos, v_bad.kind
            USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(v_pos) > 10000 THEN
        RAISE EXCEPTION 'depends_on holds % references, over the 10000 of one call', cardinality(v_pos)
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT d.pos, d.ref INTO v_bad
      FROM unnest(v_pos, v_ref, v_ppos, v_named) AS d(pos, ref, parent_pos, named)
     WHERE num_nonnulls(d.parent_pos, d.named) <> 1
        OR jsonb_typeof(d.ref -> 'run_anyway') NOT IN ('boolean', 'null')
     ORDER BY d.pos
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'depends_on at position %: % is not a reference (a position of an earlier job of this call, {"position": n} or {"job": id}, with an optional "run_anyway": true)',
            v_bad.pos, v_bad.ref
            USING ERRCODE = 'PQ009';
    END IF;
    SELECT d.pos, d.parent_pos INTO v_bad
      FROM unnest(v_pos, v_ppos) AS d(pos, parent_pos)
     WHERE d.parent_pos IS NOT NULL AND (d.parent_pos < 1 OR d.parent_pos >= d.pos)
     ORDER BY d.pos
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'job at position % depends on position %: a job may only depend on jobs before it in the call (so no cycle can form)',
            v_bad.pos, v_bad.parent_pos
            USING ERRCODE = 'PQ009';
    END IF;
    -- Each reference's parent id and child id (a position is a job of this call).
    v_parent := ARRAY(SELECT coalesce(_add_deps.ids[d.parent_pos], d.named)
                        FROM unnest(v_ppos, v_named) WITH ORDINALITY AS d(parent_pos, named, n) ORDER BY d.n);
    v_child := ARRAY(SELECT _add_deps.ids[d.pos] FROM unnest(v_pos) WITH ORDINALITY AS d(pos, n) ORDER BY d.n);
    -- From now on pgq._archive looks for edges to settle (not undone by a rollback: harmless).
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NULL THEN
        PERFORM setval('pgq.job_deps_used', 1);
    END IF;

    -- Parents named by id: live ones locked (they cannot end before our edges are committed),
    -- the others read from history.
    v_live := ARRAY(SELECT j.id FROM pgq.jobs j
                     WHERE j.id = ANY (ARRAY(SELECT DISTINCT n FROM unnest(v_named) AS n WHERE n IS NOT NULL))
                     ORDER BY j.id FOR KEY SHARE);
    SELECT d.pos, d.named AS parent_id INTO v_bad
      FROM unnest(v_pos, v_named) AS d(pos, named)
     WHERE d.named IS NOT NULL
       AND d.named <> ALL (v_live)
       AND NOT EXISTS (SELECT 1 FROM pgq.job_history h WHERE h.id = d.named)
     ORDER BY d.pos
     LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'job at position % depends on job %, which does not exist (not live, not in history)', v_bad.pos, v_bad.parent_id
            USING ERRCODE = 'PQ009';
    END IF;
    -- One call, one workflow: the oldest workflow of the jobs it names (or the oldest job named
    -- that is in none), else the call's first job with an edge. A workflow id is therefore the
    -- id of its first job, and no larger than any of its jobs' ids.
    v_wf := least((SELECT min(coalesce(pgq._workflow_of(n.p), n.p))
                     FROM (SELECT DISTINCT p FROM unnest(v_named) AS p WHERE p IS NOT NULL) n),
                  (SELECT min(_add_deps.ids[pp]) FROM unnest(v_ppos) AS pp));
    INSERT INTO pgq.job_deps (parent_id, child_id, workflow_id, run_anyway, state)
    SELECT d.parent_id, d.child_id, v_wf, bool_or(d.run_anyway),
           CASE WHEN d.named IS NULL OR d.named = ANY (v_live) THEN 'pending'
                WHEN h.status = 'successful' OR bool_or(d.run_anyway) THEN 'satisfied'
                ELSE 'failed' END
      FROM unnest(v_parent, v_child, v_named, v_any) AS d(parent_id, child_id, named, run_anyway)
      LEFT JOIN pgq.job_history h ON d.named IS NOT NULL AND h.id = d.named
     GROUP BY d.parent_id, d.child_id, d.named, h.status;
    INSERT INTO pgq.job_waits (child_id, pending)
    SELECT x.child_id, count(*) FILTER (WHERE x.state = 'pending')
      FROM pgq.job_deps x
     WHERE x.child_id = ANY (_add_deps.ids)
     GROUP BY x.child_id
    HAVING count(*) FILTER (WHERE x.state = 'pending') > 0;
    waiting := ARRAY(SELECT w.child_id FROM pgq.job_waits w WHERE w.child_id = ANY (_add_deps.ids));
    cancel := ARRAY(SELECT DISTINCT x.child_id FROM pgq.job_deps x
                     WHERE x.child_id = ANY (_add_deps.ids) AND x.state = 'failed' ORDER BY 1);
END
$$;
COMMENT ON FUNCTION pgq._add_deps(bigint[], jsonb) IS
    'Private. Parses and checks the dependencies of jobs being enqueued, writes their edges and counts; answers the jobs that wait and those to cancel at once.';
