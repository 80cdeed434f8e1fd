-- pgq._ready_lock(entrypoints): the producer side of the ready-number fence.
-- Contract: every transaction that draws numbers from pgq.ready_seq for jobs of an entrypoint
--   (enqueue, promotion, release, a retry, the stale sweep, requeue) calls this first, for
--   those entrypoints. It takes a SHARED transaction-level advisory lock on (the oid of
--   pgq.ready_seq, hashtext(entrypoint)) for each distinct entrypoint, in sorted order, held to
--   the end of the transaction. pgq._lane_cursor moves a lane's cursor only when an exclusive
--   try-lock on the same key succeeds: then every number drawn for that entrypoint before it
--   read the sequence belongs to a transaction that has ended, so a row committed late can
--   never lie behind a cursor. A transaction that draws no ready number (a long report, an
--   idle session holding an xid) does not hold a cursor back.
-- Locking: shared advisory locks (they wait only for a probe holding the exclusive lock for an
--   instant).
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._ready_lock(entrypoints text[])
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
BEGIN
    -- One entrypoint (pgq.enqueue): no query.
    IF cardinality(_ready_lock.entrypoints) = 1 THEN
        PERFORM pg_advisory_xact_lock_shared('pgq.ready_seq'::regclass::oid::int, hashtext(_ready_lock.entrypoints[1]));
        RETURN;
    END IF;
    PERFORM pg_advisory_xact_lock_shared('pgq.ready_seq'::regclass::oid::int, s.k)
       FROM (SELECT DISTINCT hashtext(e) AS k FROM unnest(_ready_lock.entrypoints) AS e ORDER BY 1) s;
END
$$;
COMMENT ON FUNCTION pgq._ready_lock(text[]) IS
    'Private. The fence: shared advisory locks a transaction holds while it draws ready numbers for these entrypoints.';
