-- pgq._revive(ids, run_at, wait, due)
-- Contract: moves the history rows of ids (failed or canceled jobs the caller has locked) back
--   into pgq.jobs, every column they kept there kept: the jobs in wait become 'waiting' (slot
--   4: they wait for their parents again), the others, when due, 'queued' with a ready number
--   in the current ring slot (behind the fence of their entrypoints, pgq._ready_lock, taken
--   first for the entrypoints of the rows it moves, whatever the caller read before), else
--   'scheduled' (slot 4); run_at is the given time. A job's dedupe key is taken again in
--   pgq.live_keys first. Returns the ids moved, in id order. The one move from history back to
--   live for pgq._requeue (requeued jobs) and pgq._rearm_deps (the jobs their failure canceled).
-- Locking: when due, the fence of their entrypoints (shared); the rows it deletes and inserts;
--   an INSERT into pgq.live_keys per dedupe key.
-- Errors: PQ007 when a live job holds the dedupe key of one of them (nothing is moved: the
--   whole call is undone).
CREATE OR REPLACE FUNCTION pgq._revive(ids bigint[], run_at timestamptz, wait bigint[], due boolean)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq._requeue and pgq._rearm_deps, whose enable_seqscan = off is in force here.
AS $$
#variable_conflict use_column
DECLARE
    v_ids   bigint[];
    v_clash text;
    v_due   boolean := _revive.due;
BEGIN
    IF v_due THEN
        PERFORM pgq._ready_lock(ARRAY(SELECT DISTINCT h.entrypoint FROM pgq.job_history h
                                        WHERE h.id = ANY (_revive.ids) AND h.id <> ALL (_revive.wait)));
    END IF;
    WITH back AS (
        DELETE FROM pgq.job_history h
         WHERE h.id = ANY (_revive.ids)
        RETURNING h.*
    ), keys AS (
        INSERT INTO pgq.live_keys (dedupe_key, job_id)
        SELECT b.dedupe_key, b.id
          FROM back b
         WHERE b.dedupe_key IS NOT NULL
         ORDER BY b.id
            ON CONFLICT (dedupe_key) DO NOTHING
        RETURNING job_id
    ), ins AS (
        INSERT INTO pgq.jobs (id, entrypoint, priority, run_at, enqueued_at, payload, headers,
                              dedupe_key, errors, timeout, status, ready_seq, slot, group_key)
        SELECT b.id, b.entrypoint, b.priority, _revive.run_at, b.enqueued_at,
               b.payload, b.headers, b.dedupe_key, b.errors, b.timeout,
               CASE WHEN b.id = ANY (_revive.wait) THEN 'waiting' WHEN v_due THEN 'queued' ELSE 'scheduled' END,
               CASE WHEN v_due AND b.id <> ALL (_revive.wait) THEN nextval('pgq.ready_seq') END,
               CASE WHEN v_due AND b.id <> ALL (_revive.wait) THEN pgq._slot() ELSE 4 END, b.group_key
          FROM (SELECT b.* FROM back b
                 WHERE b.dedupe_key IS NULL OR b.id IN (SELECT k.job_id FROM keys k)
                 ORDER BY b.id) AS b
        RETURNING id
    )
    SELECT array_agg(b.id ORDER BY b.id) FILTER (WHERE ins.id IS NOT NULL),
           (array_agg(b.dedupe_key ORDER BY b.id) FILTER (WHERE ins.id IS NULL))[1]
      INTO v_ids, v_clash
      FROM back b
      LEFT JOIN ins ON ins.id = b.id;
    IF v_clash IS NOT NULL THEN
        -- Raising undoes the whole call: no history row is lost, nothing is requeued.
        RAISE EXCEPTION 'cannot requeue: dedupe key % is held by a live job', quote_literal(v_clash)
            USING ERRCODE = 'PQ007';
    END IF;
    RETURN coalesce(v_ids, '{}');
END
$$;
COMMENT ON FUNCTION pgq._revive(bigint[], timestamptz, bigint[], boolean) IS
    'Private. Moves failed or canceled jobs from history back into pgq.jobs (waiting, queued or scheduled), their dedupe keys taken again; for pgq._requeue and pgq._rearm_deps.';
