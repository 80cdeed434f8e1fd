-- pgq._claim_keyed(entrypoints, limited, batch_size, at)
-- Contract: the jobs pgq.claim takes when it holds the policy row of an entrypoint with a
--   key_concurrency_limit or a rate limit per key (rate_per_key; limited: the entrypoints whose
--   rows it locked): the ids of up to batch_size queued jobs, locked, as pgq.claim's own
--   statement chooses them (priority, then ready order, within each entrypoint's quota,
--   pgq._quota), except that the lanes of key-limited entrypoints take their candidates from
--   pgq._keyed_candidates (group keys in turn, each within its room: running jobs and starts
--   in the rate window per key), and each key is capped again across the lanes of its
--   entrypoint with the room they reported (a key queued at two priorities). Only called when such a row is held,
--   so a claim without key limits runs its own statement and pays nothing for this one.
-- Locking: FOR UPDATE SKIP LOCKED on the candidates (pgq.claim holds the policy rows).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._claim_keyed(
    entrypoints  text[],
    limited      text[],
    batch_size   int,
    at           timestamptz
)
RETURNS bigint[]
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq.claim, whose settings (generic plans, no JIT, no sequential scans) are in
-- force here too: setting them again would cost every call. No bitmap scans either (here and in
-- pgq._keyed_candidates, which it calls): with a ring slot's statistics saying it is nearly
-- empty, the key walk's step ("the next key after this one") was planned as a bitmap scan of
-- the lane's whole ready index, the key a filter, instead of one probe of jobs_key_idx.
SET enable_bitmapscan = off
AS $$
#variable_conflict use_column
DECLARE
    v_ids bigint[];
BEGIN
    WITH eps AS (
        SELECT c.entrypoint, c.key_concurrency_limit AS key_limit,
               c.key_concurrency_limit IS NOT NULL OR (c.rate_per_key AND c.rate_limit IS NOT NULL) AS keyed,
               CASE WHEN c.rate_per_key THEN c.rate_limit END AS key_rate, c.rate_period,
               CASE WHEN c.concurrency_limit IS NULL AND c.key_concurrency_limit IS NULL AND c.rate_limit IS NULL
                    THEN _claim_keyed.batch_size
                    WHEN c.entrypoint = ANY (_claim_keyed.limited) THEN
                         pgq._quota(c.entrypoint, c.concurrency_limit, c.rate_limit, c.rate_period,
                                    c.rate_per_key, _claim_keyed.batch_size, _claim_keyed.at)
                    ELSE 0 END AS quota
          FROM pgq.entrypoints c
         WHERE c.entrypoint = ANY (_claim_keyed.entrypoints)
           AND c.paused_at IS NULL
    ), lanes AS MATERIALIZED (
        SELECT l.entrypoint, l.priority, eps.quota, eps.key_limit, eps.keyed, eps.key_rate, eps.rate_period, l.turn_seq,
               pgq._lane_cursor(l.entrypoint, l.priority, l.cursor_seq) AS cursor
          FROM eps
          JOIN pgq.lanes l ON l.entrypoint = eps.entrypoint
         WHERE eps.quota > 0
    ), candidates AS (
        SELECT q.id, q.entrypoint, q.priority, q.ready_seq, lanes.quota, NULL::bigint AS key_hash, NULL::int AS room
          FROM lanes
         CROSS JOIN LATERAL (
               SELECT j.id, j.entrypoint, j.priority, j.ready_seq
                 FROM pgq.jobs j
                WHERE j.entrypoint = lanes.entrypoint
                  AND j.priority = lanes.priority
                  AND j.status = 'queued'
                  AND j.slot <> 4
                  AND j.ready_seq > lanes.cursor
                  AND j.run_at <= _claim_keyed.at
                ORDER BY j.ready_seq
                LIMIT least(lanes.quota, _claim_keyed.batch_size)
                  FOR UPDATE SKIP LOCKED) AS q
         WHERE NOT lanes.keyed
        UNION ALL
        -- Per-key limits and fair share (pgq._keyed_candidates): keys in turn, each within its room.
        SELECT k.id, lanes.entrypoint, lanes.priority, k.ready_seq, lanes.quota, k.key_hash, k.room
          FROM lanes
         CROSS JOIN LATERAL pgq._keyed_candidates(lanes.entrypoint, lanes.priority, lanes.cursor, lanes.turn_seq,
                                                  least(lanes.quota, _claim_keyed.batch_size)::int, lanes.key_limit,
                                                  lanes.key_rate, lanes.rate_period, _claim_keyed.at) AS k
         WHERE lanes.keyed
    )
    SELECT array_agg(p.id) INTO v_ids
      FROM (SELECT r.id
              FROM (SELECT c.id, c.priority, c.ready_seq, c.quota, c.room,
                           row_number() OVER (PARTITION BY c.entrypoint
                                              ORDER BY c.priority DESC, c.ready_seq) AS n,
                           row_number() OVER (PARTITION BY c.entrypoint, c.key_hash
                                              ORDER BY c.priority DESC, c.ready_seq) AS kn
                      FROM candidates c) r
             WHERE r.n <= r.quota
               AND (r.room IS NULL OR r.kn <= r.room)
             ORDER BY r.priority DESC, r.ready_seq
             LIMIT _claim_keyed.batch_size) AS p;
    RETURN v_ids;
END
$$;
COMMENT ON FUNCTION pgq._claim_keyed(text[], text[], int, timestamptz) IS
    'Private. The jobs pgq.claim takes when it holds a key-limited entrypoint: its own choice, with the lanes of key-limited entrypoints served by pgq._keyed_candidates and each key capped across lanes.';
