-- pgq._sample_backlog(at): the charts' backlog sample of the minute `at` falls in.
-- Contract: when pgq.metrics_backlog has no row for that minute yet, writes one per entrypoint:
--   due (queued jobs, and scheduled ones due at `at` not promoted yet, each part counted up to
--   10,000 like pgq.metrics, so at most 20,000) and running; and deletes samples older than one
--   hour. Otherwise does nothing (one sample per minute, whoever calls). Called by
--   pgq.rollup_metrics under its lock, so callers never write one minute twice; the primary key
--   guards it anyway.
-- Locking: inserts and deletes rows of pgq.metrics_backlog.
-- Errors: none.
CREATE OR REPLACE FUNCTION pgq._sample_backlog(at timestamptz)
RETURNS void
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Each count reads its partial index from the entrypoint on, never a whole slot (a plan made
-- while a slot is empty must not scan it whole once it is full: tests/py/test_plans.py).
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_minute timestamptz := date_bin(interval '1 minute', _sample_backlog.at, timestamptz '2000-01-01 00:00:00+00');
    v_cap    CONSTANT bigint := 10000;
BEGIN
    IF EXISTS (SELECT 1 FROM pgq.metrics_backlog b WHERE b.minute = v_minute) THEN
        RETURN;
    END IF;
    INSERT INTO pgq.metrics_backlog (entrypoint, minute, due, running)
    SELECT e.entrypoint, v_minute, qd.n + sd.n, rn.n
      FROM pgq.entrypoints e
     CROSS JOIN LATERAL (
           SELECT count(*) AS n
             FROM (SELECT 1 FROM pgq.jobs j
                    WHERE j.entrypoint = e.entrypoint AND j.status = 'queued'
                    LIMIT v_cap) AS x) AS qd
     CROSS JOIN LATERAL (
           SELECT count(*) AS n
             FROM (SELECT 1 FROM pgq.jobs j
                    WHERE j.entrypoint = e.entrypoint AND j.status = 'scheduled' AND j.slot = 4
                      AND j.run_at <= _sample_backlog.at
                    LIMIT v_cap) AS x) AS sd
     CROSS JOIN LATERAL (
           SELECT count(*) AS n FROM pgq.jobs j
            WHERE j.entrypoint = e.entrypoint AND j.status = 'running') AS rn
     ORDER BY e.entrypoint
        ON CONFLICT DO NOTHING;
    DELETE FROM pgq.metrics_backlog b WHERE b.minute < v_minute - interval '1 hour';
END
$$;
COMMENT ON FUNCTION pgq._sample_backlog(timestamptz) IS
    'Private. Once per minute: due and running jobs per entrypoint into pgq.metrics_backlog (kept one hour), for pgq.metrics_series.';
