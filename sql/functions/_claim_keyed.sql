-- pgq._claim_keyed(entrypoints, limited, batch_size, at)
-- Contract: the jobs pgq.claim takes when it holds the policy row of an entrypoint with a
--   key_concurrency_limit or a rate limit per key (rate_per_key; limited: the entrypoints whose
--   rows it locked): the ids of up to batch_size queued jobs, locked, as pgq.claim's own
--   statement chooses them (priority, then ready order, within each entrypoint's quota,
--   pgq._quota), except that the lanes of key-limited entrypoints take their candidates from
--   pgq._keyed_candidates (group keys in turn, each within its room: running jobs and starts
--   in the rate window per key), and each key is capped again across the lanes of its
--   entrypoint with the room they reported (a key queued at two priorities) before the
--   entrypoint's quota is counted. Only called when such a row is held, so a claim without key
--   limits runs its own statement and pays nothing for this one.
--   The starts of the chosen jobs of rate-limited entrypoints are recorded here, in the same
--   statement (pgq._rate_rows inlined into a data-modifying CTE: it knows each job's budget, so
--   pgq.claim does not read the jobs again, and the record starts no statement of its own);
--   pgq.claim's UPDATE then takes every job chosen (they are locked), in the same transaction.
-- Locking: FOR UPDATE SKIP LOCKED on the candidates (pgq.claim holds the policy rows); inserts
--   into pgq.rate_starts.
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
-- Called only by pgq.claim, whose settings (generic plans, no JIT, no sequential or bitmap
-- scans) are in force here too, and in pgq._keyed_candidates, which it calls: setting them
-- again would cost every call.
AS $$
#variable_conflict use_column
DECLARE
    c_whole constant bigint := -9223372036854775808;  -- pgq.rate_starts.key_hash: no key
    v_ids   bigint[];
BEGIN
    WITH eps AS MATERIALIZED (  -- (each quota computed once, not again in the filter of lanes)
        SELECT c.entrypoint, c.key_concurrency_limit AS key_limit,
               c.key_concurrency_limit IS NOT NULL OR (c.rate_per_key AND c.rate_limit IS NOT NULL) AS keyed,
               CASE WHEN c.rate_per_key THEN c.rate_limit END AS key_rate, c.rate_period,
               c.rate_limit IS NOT NULL AS rated,
               CASE WHEN c.concurrency_limit IS NULL AND c.key_concurrency_limit IS NULL AND c.rate_limit IS NULL
                    THEN _claim_keyed.batch_size
                    WHEN NOT c.entrypoint = ANY (_claim_keyed.limited) THEN 0  -- (another claimer holds it)
                    -- Only limits per key: pgq._quota's answer, without its call (the rooms are
                    -- pgq._keyed_candidates').
                    WHEN c.concurrency_limit IS NULL AND (c.rate_limit IS NULL OR c.rate_per_key)
                    THEN _claim_keyed.batch_size
                    ELSE pgq._quota(c.entrypoint, c.concurrency_limit, c.rate_limit, c.rate_period,
                                    c.rate_per_key, _claim_keyed.batch_size, _claim_keyed.at) END AS quota
          FROM pgq.entrypoints c
         WHERE c.entrypoint = ANY (_claim_keyed.entrypoints)
           AND c.paused_at IS NULL
    ), lanes AS MATERIALIZED (
        SELECT l.entrypoint, l.priority, eps.quota, eps.key_limit, eps.keyed, eps.key_rate, eps.rate_period, eps.rated,
               l.turn_seq,
               pgq._lane_cursor(l.entrypoint, l.priority, l.cursor_seq) AS cursor
          FROM eps
          JOIN pgq.lanes l ON l.entrypoint = eps.entrypoint
         WHERE eps.quota > 0
    ), candidates AS (
        -- Lanes without per-key limits (pgq._lane_jobs: a claim of keyed lanes only never calls
        -- it, nor prepares its read).
        SELECT q.id, lanes.entrypoint, lanes.priority, q.ready_seq, lanes.quota, NULL::bigint AS key_hash,
               NULL::int AS room, lanes.rated, false AS per_key, NULL::text AS group_key
          FROM lanes
         CROSS JOIN LATERAL pgq._lane_jobs(lanes.entrypoint, lanes.priority, lanes.cursor,
                                           least(lanes.quota, _claim_keyed.batch_size)::int, _claim_keyed.at) AS q
         WHERE NOT lanes.keyed
        UNION ALL
        -- Per-key limits and fair share (pgq._keyed_candidates): keys in turn, each within its room.
        SELECT k.id, lanes.entrypoint, lanes.priority, k.ready_seq, lanes.quota, k.key_hash, k.room,
               lanes.rated, lanes.key_rate IS NOT NULL, k.group_key
          FROM lanes
         CROSS JOIN LATERAL pgq._keyed_candidates(lanes.entrypoint, lanes.priority, lanes.cursor, lanes.turn_seq,
                                                  least(lanes.quota, _claim_keyed.batch_size)::int, lanes.key_limit,
                                                  lanes.key_rate, lanes.rate_period, _claim_keyed.at) AS k
         WHERE lanes.keyed
    ), chosen AS MATERIALIZED (
        SELECT r.id, r.entrypoint, r.rated,
               CASE WHEN r.per_key AND r.group_key IS NOT NULL THEN r.key_hash ELSE c_whole END AS h,
               CASE WHEN r.per_key THEN r.group_key END AS k
          FROM (SELECT k.*,
                       -- numbered within the entrypoint's quota after the cap per key: a
                       -- candidate the cap drops does not use up the quota
                       row_number() OVER (PARTITION BY k.entrypoint
                                          ORDER BY k.priority DESC, k.ready_seq) AS n
                  FROM (SELECT c.id, c.entrypoint, c.priority, c.ready_seq, c.quota, c.room, c.rated, c.per_key,
                               c.key_hash, c.group_key,
                               row_number() OVER (PARTITION BY c.entrypoint, c.key_hash
                                                  ORDER BY c.priority DESC, c.ready_seq) AS kn
                          FROM candidates c) k
                 WHERE k.room IS NULL OR k.kn <= k.room) r
         WHERE r.n <= r.quota
         ORDER BY r.priority DESC, r.ready_seq
         LIMIT _claim_keyed.batch_size
    ), recorded AS (
        -- Rate-limited entrypoints: the starts, one row per budget (the whole entrypoint, or
        -- each group key with rate_per_key), counted by the next claim under the same
        -- policy-row lock; pgq.claim's UPDATE takes every job chosen here (they are locked):
        -- they start now. (A data-modifying CTE runs to its end, read or not.)
        INSERT INTO pgq.rate_starts (entrypoint, key_hash, rate_key, started_at, tokens, cum)
        SELECT r.*
          FROM (SELECT c.entrypoint, c.h, c.k, count(*)::int AS n
                  FROM chosen c
                 WHERE c.rated
                 GROUP BY 1, 2, 3) AS b
         CROSS JOIN LATERAL pgq._rate_rows(b.entrypoint, b.h, b.k, b.n, _claim_keyed.at) AS r
    )
    SELECT array_agg(c.id) INTO v_ids FROM chosen c;
    RETURN v_ids;
END
$$;
COMMENT ON FUNCTION pgq._claim_keyed(text[], text[], int, timestamptz) IS
    'Private. The jobs pgq.claim takes when it holds a key-limited entrypoint: its own choice, with the lanes of key-limited entrypoints served by pgq._keyed_candidates and each key capped across lanes.';
