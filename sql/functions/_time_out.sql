-- pgq._time_out(ids, at): running attempts past their deadline end as failed, "timed out".
-- Contract: of the given jobs, those still running whose attempt's deadline_at (set by the claim:
--   claim time + the job's own timeout, else its entrypoint's run_timeout) is at or before `at`
--   end as a failed attempt, through pgq.complete under their own worker and lease, so the
--   retry policy applies as for any failure (queued again after the backoff, dead on the last
--   attempt, canceled when a cancel was requested). The details SQL writes:
--   {error: 'timed out', message: 'timed out after N s', timeout_s, started_at, deadline_at}.
--   The lease is written with the error entry, so a result the worker sends later under that
--   lease is answered with this decision and changes nothing. Returns the ids ended.
--   Called by pgq._sweep (pgq.maintain and the claims: also when the worker is hung or gone)
--   and by pgq.heartbeat (which answers 'timed_out': the worker stops the handler at once).
-- Locking: row locks on the jobs ended (pgq.complete: in id order).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._time_out(ids bigint[], at timestamptz)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
AS $$
#variable_conflict use_column
DECLARE
    v_done bigint[] := '{}';
    v_w    record;
BEGIN
    FOR v_w IN
        SELECT j.worker_id, array_agg(j.id ORDER BY j.id) AS ids, array_agg(j.lease ORDER BY j.id) AS leases,
               jsonb_agg(jsonb_build_object(
                   'error', 'timed out',
                   'message', format('timed out after %s s',
                                     trim_scale(extract(epoch FROM j.deadline_at - j.started_at))),
                   'timeout_s', extract(epoch FROM j.deadline_at - j.started_at)::float8,
                   'started_at', j.started_at, 'deadline_at', j.deadline_at) ORDER BY j.id) AS details
          FROM pgq.jobs j
         WHERE j.id = ANY (_time_out.ids)
           AND j.status = 'running' AND j.slot <> 4
           AND j.deadline_at <= _time_out.at
         GROUP BY j.worker_id
         ORDER BY j.worker_id
    LOOP
        SELECT v_done || coalesce(array_agg(c.id), '{}') INTO v_done
          FROM pgq.complete(v_w.worker_id, v_w.ids, v_w.leases,
                            array_fill('failed'::text, ARRAY[cardinality(v_w.ids)]), v_w.details,
                            _time_out.at) AS c;
    END LOOP;
    RETURN v_done;
END
$$;
COMMENT ON FUNCTION pgq._time_out(bigint[], timestamptz) IS
    'Private. Ends running attempts past their deadline as failed attempts (timed out after N s), through pgq.complete: the retry policy applies. Returns the ids ended.';
