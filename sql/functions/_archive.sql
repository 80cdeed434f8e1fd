-- pgq._archive(ids, statuses, details, at, worker_id, leases): move live jobs to pgq.job_history.
-- Contract: deletes the given jobs from pgq.jobs and writes one history row each with the final
--   status (successful, failed or canceled), details and finished_at = at, and frees their
--   dedupe keys in pgq.live_keys (only a key still held by that job id). Returns one row per
--   job moved: its id, entrypoint, final status and the attempt that ended. statuses may also
--   say 'interrupted' (an attempt cut off: the job ends canceled, the attempt appended to the
--   error list but not counted) or 'released' (pgq.release of a job whose cancel was requested:
--   canceled, never started, so no attempt, start time or worker is recorded), 'fatal' (the
--   job can never succeed: failed, its attempt counted, outcome 'fatal' in the error list) or
--   'snoozed' (a snooze of a job whose cancel was requested: canceled, the attempt not
--   counted, as an interrupted one); 'failed' and 'fatal' end canceled when the job's
--   cancellation was requested, the attempt appended all the same. The job's own timeout is
--   kept with it (pgq.requeue brings it back).
--   Without worker_id and leases, callers must already hold the row locks (a vanished row is
--   skipped). With them, only jobs still running under that worker and lease move (the lease
--   fence of pgq.complete, checked again by the DELETE itself under concurrent updates), and a
--   'failed' job whose cancellation was requested ends as 'canceled', and the history row keeps
--   the lease (pgq.complete recognises a repeated call by it). Without leases (cancel, release,
--   the claim path archiving a stale job) no lease is recorded: an attempt that did not finish
--   the job cannot pass for one that did. A failed or interrupted attempt is appended to the
--   error list: {attempt, at, lease and worker_id (with leases), outcome ('interrupted', 'snoozed' or 'fatal' for
--   one), decision (the final status), details}. One statement: no separate locking pass.
--   Jobs that other jobs wait for (pgq.job_deps) settle their edges in the same transaction
--   (pgq._settle_deps: waiting children released or canceled).
--   slots (up to four of pgq.jobs' slots; NULL: every slot) restricts the DELETE to those
--   partitions: pgq.complete's first look passes the slots its leases name (a job carried to
--   another slot since is not found there, and is looked for again in every slot).
-- Locking: row locks on the deleted jobs and their pgq.live_keys rows.
-- Errors: none of its own; the history CHECK constraint rejects an unknown status.
CREATE OR REPLACE FUNCTION pgq._archive(
    ids        bigint[],
    statuses   text[],
    details    jsonb[],
    at         timestamptz,
    worker_id  uuid     DEFAULT NULL,
    leases     bigint[] DEFAULT NULL,
    slots      smallint[] DEFAULT NULL
)
RETURNS TABLE (id bigint, entrypoint text, status text, attempt int)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
-- Index scans by id (jobs_id_idx): a generic plan made while a partition was empty would
-- otherwise scan it sequentially once per job after it has filled.
SET enable_seqscan = off
-- The input meets pgq.jobs in a hash join only (docs/decisions/0007): one scan by id per
-- partition, whatever the statistics. A nested loop would probe every partition once per job
-- (or rescan the input once per row); no statement here needs one.
SET enable_nestloop = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    v_slots smallint[] := coalesce(_archive.slots, '{0,1,2,3,4}');
BEGIN
    RETURN QUERY
    WITH input AS (
        SELECT u.id, u.lease, u.status, u.details
          FROM unnest(_archive.ids, _archive.leases, _archive.statuses, _archive.details)
               AS u(id, lease, status, details)
    ), gone AS (
        DELETE FROM pgq.jobs j
         USING input i
         WHERE j.id = i.id
           AND j.id = ANY (_archive.ids)
           -- A list of values (not an array parameter): the executor prunes partitions by it.
           AND (j.slot = v_slots[1] OR j.slot = v_slots[2] OR j.slot = v_slots[3] OR j.slot = v_slots[4] OR j.slot = v_slots[5])
           AND (_archive.leases IS NULL
                OR (j.lease = i.lease AND j.status = 'running' AND j.worker_id = _archive.worker_id))
        RETURNING j.*,
                  CASE WHEN i.status IN ('interrupted', 'released', 'snoozed') THEN 'canceled'
                       WHEN i.status IN ('failed', 'fatal') AND j.cancel_requested THEN 'canceled'
                       WHEN i.status = 'fatal' THEN 'failed'
                       ELSE i.status END AS final_status,
                  i.status IN ('failed', 'interrupted', 'snoozed', 'fatal') AS ended_attempt,
                  CASE WHEN i.status IN ('interrupted', 'snoozed', 'fatal') THEN i.status END AS noted,
                  -- Not an attempt: an interrupted one or a snooze is not counted, a released
                  -- job never started (and had no worker).
                  i.status IN ('interrupted', 'released', 'snoozed') AS uncounted,
                  i.status = 'released' AS released,
                  i.details AS final_details
    ), keys AS (
        -- The keys as an array (no join: a hash join would read the whole of live_keys). A key
        -- is held by one job, so key and holder both among the moved ones is that job's key.
        DELETE FROM pgq.live_keys k
         WHERE k.dedupe_key = ANY (ARRAY(SELECT g.dedupe_key FROM gone g WHERE g.dedupe_key IS NOT NULL))
           AND k.job_id = ANY (ARRAY(SELECT g.id FROM gone g WHERE g.dedupe_key IS NOT NULL))
    ), ins AS (
        INSERT INTO pgq.job_history AS h (id, entrypoint, status, priority, attempt, payload, headers,
                                          dedupe_key, enqueued_at, started_at, finished_at, worker_id,
                                          lease, details, errors, timeout, group_key)
        SELECT g.id, g.entrypoint, g.final_status, g.priority,
               CASE WHEN g.uncounted THEN g.attempt - 1 ELSE g.attempt END, g.payload, g.headers,
               g.dedupe_key, g.enqueued_at, CASE WHEN g.released THEN NULL ELSE g.started_at END,
               _archive.at, CASE WHEN g.released THEN NULL ELSE g.worker_id END,
               CASE WHEN _archive.leases IS NULL THEN NULL ELSE g.lease END, g.final_details,
               CASE WHEN g.ended_attempt
                    THEN g.errors || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                             'attempt', g.attempt, 'at', _archive.at,
                             'lease', CASE WHEN _archive.leases IS NULL THEN NULL ELSE g.lease END,
                             'worker_id', CASE WHEN _archive.leases IS NULL THEN NULL ELSE g.worker_id END,
                             'outcome', g.noted,
                             'decision', g.final_status))
                             || jsonb_build_object('details', g.final_details))
                    ELSE g.errors END,
               g.timeout, g.group_key
          FROM gone g
    )
    -- The attempt that ended (an interrupted one too, though history does not count it).
    SELECT g.id, g.entrypoint, g.final_status, g.attempt FROM gone g;
    -- Workflows: jobs that others wait for settle their edges now (pgq._settle_deps; not
    -- again for the children it cancels itself). In a database that never used dependencies,
    -- a read of a sequence (a simple expression: no statement); else one probe of
    -- job_deps_pending_idx per job, by its id (not a probe for any pending edge at all: under
    -- a held horizon that walks the dead entries of every edge settled since).
    IF pg_sequence_last_value('pgq.job_deps_used'::regclass) IS NOT NULL THEN
        IF EXISTS (SELECT 1 FROM pgq.job_deps d WHERE d.parent_id = ANY (_archive.ids) AND d.state = 'pending')
           AND coalesce(current_setting('pgq.settling', true), 'off') <> 'on' THEN
            PERFORM pgq._settle_deps(_archive.ids, _archive.at);
        END IF;
    END IF;
END
$$;
COMMENT ON FUNCTION pgq._archive(bigint[], text[], jsonb[], timestamptz, uuid, bigint[], smallint[]) IS
    'Private. Moves jobs from pgq.jobs to pgq.job_history with their final status (lease-checked when leases are given); returns the jobs moved (id, entrypoint, status, attempt).';
