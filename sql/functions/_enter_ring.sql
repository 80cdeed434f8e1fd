-- pgq._enter_ring(ids, from_status, entrypoints)
-- Contract: moves the jobs ids that are in jobs_scheduled (slot 4) with status from_status
--   ('scheduled': pgq._promote; 'waiting': a workflow's released children, pgq._settle_deps)
--   into the ring's current slot as 'queued', each with a new ready number, in run_at order
--   (then id), behind the fence of their entrypoints (pgq._ready_lock(entrypoints): the caller
--   names them). Every other column is kept (id, attempt, errors, dedupe key). A move is
--   DELETE ... RETURNING + INSERT in one statement (an UPDATE that changes the partition would
--   make a concurrent waiter fail; a waiter here finds the row gone and looks again, see
--   pgq.cancel). The jobs are found by id: no scan of an index that a held horizon fills with
--   dead entries. The insert trigger tells idle workers. Returns the number of jobs moved.
-- Locking: the fence of the entrypoints (shared, to the end of the transaction); the caller
--   holds the moved rows (FOR UPDATE).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._enter_ring(ids bigint[], from_status text, entrypoints text[])
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
    v_n int;
BEGIN
    PERFORM pgq._ready_lock(_enter_ring.entrypoints);
    -- slot = 4 stays a literal: it leaves the ring's partitions out of the plan.
    WITH moved AS (
        DELETE FROM pgq.jobs j
         WHERE j.id = ANY (_enter_ring.ids)
           AND j.status = _enter_ring.from_status AND j.slot = 4
        RETURNING j.*
    )
    INSERT INTO pgq.jobs (id, entrypoint, status, priority, run_at, enqueued_at, attempt, payload,
                          headers, dedupe_key, cancel_requested, errors, timeout, ready_seq, slot, group_key)
    SELECT m.id, m.entrypoint, 'queued', m.priority, m.run_at, m.enqueued_at, m.attempt, m.payload,
           m.headers, m.dedupe_key, m.cancel_requested, m.errors, m.timeout, nextval('pgq.ready_seq'), pgq._slot(), m.group_key
      FROM (SELECT * FROM moved ORDER BY run_at, id) m;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    RETURN v_n;
END
$$;
COMMENT ON FUNCTION pgq._enter_ring(bigint[], text, text[]) IS
    'Private. Moves jobs of jobs_scheduled (by id, with the given status) into the ring as queued, with ready numbers in run_at order behind the fence; the caller holds them.';
