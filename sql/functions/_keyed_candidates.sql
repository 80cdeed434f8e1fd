-- pgq._keyed_candidates(entrypoint, priority, cursor, turn_seq, quota, key_limit, key_rate,
--                       rate_period, at)
-- Contract: the candidates of one lane of an entrypoint with a key_concurrency_limit or a rate
--   limit per key (key_rate per rate_period; NULL when the entrypoint has none), for
--   pgq.claim: up to quota queued jobs (due at `at`, ready number above the lane's cursor),
--   locked FOR UPDATE SKIP LOCKED, taken from the lane's group keys in turn. It first finds
--   the ring slots where the lane has a queued job above the cursor (one probe of
--   jobs_ready_idx each); the walk reads only those. A statement
--   walks the keys of the lane that have queued jobs in the order of their hash
--   (hashtextextended(key, 0); one probe of jobs_key_idx per key, which finds the key's oldest
--   job due above the cursor: the index's entries below the cursor, jobs claimed before that a
--   held vacuum horizon keeps, are passed in the index without a heap visit), starting after
--   the key the lane's last keyed claim served (turn_seq) and going round the ring at most
--   once, until it met quota keys with room or visited 100 + 4 * quota keys (a lane whose keys
--   are all full costs a bounded walk; the next claim goes on from there). Round 1: each key
--   met with room gives one job, the oldest the walk found, locked where the walk read it
--   (its ctid in its slot: no index probe). When the walk passed the end of the ring, the
--   jobs of the lane without a key get their turn as one more group (one job; all that is
--   left when no key has queued jobs), looked for among the first 100 queued jobs of the
--   lane. Round 2, when room
--   is left: each key met gives what room it has left, in walk order. A key's room is the least
--   of key_limit minus its running jobs (counted after the walk, in one range scan of
--   jobs_key_running_idx over the hashes of the keys met: the cost follows the keys visited,
--   not the entrypoint's running jobs; keys met at their limit make the walk go on in another
--   pass) and key_rate minus its starts in the rate window (pgq._rate_window, inlined in the
--   walk's statement: two probes per key; the jobs without a key have one budget of their own,
--   read only when their turn comes). turn_seq is set to the last key served.
--   Answers (id, ready_seq, key_hash, room, group_key): key_hash and room (before this claim)
--   let the claim cap each key across its lanes (priorities), group_key names the key whose
--   rate budget a start uses; key_hash and room are NULL for a job without a key (with
--   key_rate: the whole-entrypoint hash of pgq.rate_starts and that group's room).
--   Keys whose hashes collide (two keys of 2^64) count as one key: a stricter limit, never
--   a looser one.
-- Locking: row locks on the returned jobs (SKIP LOCKED); the caller holds the entrypoint's
--   policy row (one claimer at a time per key-limited entrypoint: the counts are exact).
--   Sets turn_seq (a sequence: no row version per claim, not undone by a rollback).
-- Errors: none of its own.
CREATE OR REPLACE FUNCTION pgq._keyed_candidates(
    entrypoint  text,
    priority    int,
    cursor      bigint,
    turn_seq    regclass,
    quota       int,
    key_limit   int,
    key_rate    int,
    rate_period interval,
    at          timestamptz
)
RETURNS TABLE (id bigint, ready_seq bigint, key_hash bigint, room int, group_key text)
LANGUAGE plpgsql
VOLATILE
SET search_path = pg_catalog, pgq, pg_temp
-- Called only by pgq._claim_keyed, whose settings (generic plans, no JIT, no sequential
-- scans) are in force here too: setting them again would cost every call.
AS $$
#variable_conflict use_column
DECLARE
    c_min     constant bigint := -9223372036854775808;
    c_queued  constant text := 'queued';
    c_big     constant int := 1000000000;  -- no limit of that kind
    v_ep      constant int := hashtext(_keyed_candidates.entrypoint);  -- jobs_key_idx's first column
    v_free    int;                          -- the room of the jobs without a key
    v_h       bigint := coalesce(pg_sequence_last_value(_keyed_candidates.turn_seq), c_min);
    v_left    int := _keyed_candidates.quota;
    v_keys    bigint[];
    v_rooms   int[];
    v_ends    boolean := false;
    v_last    bigint;                       -- the last key visited
    v_served  bigint;                       -- the last key served
    v_need    int := _keyed_candidates.quota;  -- keys still to meet with room
    v_n       int := 0;                     -- keys visited (the walk's state between passes)
    v_wrapped boolean := false;
    v_first   bigint;
    v_target  int := _keyed_candidates.quota;  -- keys with rate room this pass walks to
    v_ids     bigint[] := '{}';
    v_seqs    bigint[] := '{}';
    v_hashes  bigint[] := '{}';
    v_kroom   int[] := '{}';
    v_gkeys   text[] := '{}';
    v_got     record;
    v_slots   smallint[];                   -- the ring slots the walk reads
    -- The ring slots whose running jobs the walk counts: all four with a key_concurrency_limit,
    -- none without (a rate per key alone: the count's scans are pruned before they start).
    v_held    smallint[] := CASE WHEN _keyed_candidates.key_limit IS NOT NULL THEN '{0,1,2,3}'::smallint[] END;
BEGIN
    IF v_left <= 0 THEN
        RETURN;
    END IF;
    -- The ring slots with a queued job of the lane above the cursor (one probe of
    -- jobs_ready_idx each; the walk's probes are pruned to them; NULL for a slot without one):
    -- in a slot without one, each probe's seek by key would read the rest of the lane's
    -- entries there (all below the cursor) for nothing, such as a drained slot not yet
    -- truncated. One EXISTS per slot, the slot a literal: each reads its partition alone,
    -- pruned when the plan is made (a lateral probe per slot of generate_series(0, 3) read
    -- them through an Append pruned on every execution: 4,000 instructions more per job,
    -- docs/performance.md).
    v_slots := ARRAY[CASE WHEN EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.slot = 0 AND j.entrypoint = _keyed_candidates.entrypoint
                                           AND j.priority = _keyed_candidates.priority AND j.status = 'queued'
                                           AND j.ready_seq > _keyed_candidates.cursor)
                          THEN 0 END,
                     CASE WHEN EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.slot = 1 AND j.entrypoint = _keyed_candidates.entrypoint
                                           AND j.priority = _keyed_candidates.priority AND j.status = 'queued'
                                           AND j.ready_seq > _keyed_candidates.cursor)
                          THEN 1 END,
                     CASE WHEN EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.slot = 2 AND j.entrypoint = _keyed_candidates.entrypoint
                                           AND j.priority = _keyed_candidates.priority AND j.status = 'queued'
                                           AND j.ready_seq > _keyed_candidates.cursor)
                          THEN 2 END,
                     CASE WHEN EXISTS (SELECT 1 FROM pgq.jobs j WHERE j.slot = 3 AND j.entrypoint = _keyed_candidates.entrypoint
                                           AND j.priority = _keyed_candidates.priority AND j.status = 'queued'
                                           AND j.ready_seq > _keyed_candidates.cursor)
                          THEN 3 END];
    -- One statement per pass: the walk over the keys with queued jobs in hash order after the
    -- pointer, round the ring at most once (the end of the ring is a NULL step: the jobs without
    -- a key), one index probe per key, until the pass met its target of keys with rate room
    -- (the keys still needed; doubled in each further pass) or 100 + 4 * quota keys were
    -- visited in all; the running jobs of the keys met, counted in one range
    -- scan of jobs_key_running_idx over their hashes (the keys visited, not every running job
    -- of the entrypoint); and round 1: one job (its oldest) from each key met with room, in
    -- walk order. Keys met at their concurrency limit leave room unused: another pass walks on
    -- from where this one stopped (only while keys are full).
    LOOP
        WITH RECURSIVE walk (h, n, found, wrapped, first, room, id, slot, tid, k) AS (
            SELECT v_h, v_n, 0, v_wrapped, v_first, NULL::int, NULL::bigint, NULL::smallint, NULL::tid, NULL::text
            UNION ALL
            SELECT nx.h, w.n + 1,
                   w.found + CASE WHEN nx.h IS NOT NULL AND nx.room > 0 THEN 1 ELSE 0 END,
                   w.wrapped OR (nx.h IS NULL AND w.first IS NOT NULL),
                   coalesce(w.first, nx.h), nx.room, nx.id, nx.slot, nx.tid, nx.k
              FROM walk w
             CROSS JOIN LATERAL (
                   SELECT k.h, k.id, k.slot, k.tid, k.k,
                          CASE WHEN _keyed_candidates.key_rate IS NULL OR k.h IS NULL THEN c_big
                               ELSE _keyed_candidates.key_rate - coalesce(r.used, 0)::int END AS room
                     FROM (SELECT s.h, s.id, s.slot, s.tid, s.k
                             FROM (SELECT 1) AS one
                             LEFT JOIN LATERAL (
                                  -- The next key with a job due above the cursor, and that job (its
                                  -- oldest): the first entry of jobs_key_idx after the last key.
                                  SELECT hashtextextended(j.group_key, 0) AS h, j.id, j.slot, j.ctid AS tid, j.group_key AS k
                                    FROM pgq.jobs j
                                   WHERE hashtext(j.entrypoint) = v_ep
                                     AND j.entrypoint = _keyed_candidates.entrypoint
                                     AND j.priority = _keyed_candidates.priority
                                     AND j.status = 'queued'
                                     AND j.group_key IS NOT NULL
                                     AND j.slot <> 4
                                     AND j.slot IN (v_slots[1], v_slots[2], v_slots[3], v_slots[4])  -- (pruned as it runs)
                                     AND hashtextextended(j.group_key, 0) > coalesce(w.h, c_min)
                                     AND j.ready_seq > _keyed_candidates.cursor
                                     AND j.run_at <= _keyed_candidates.at
                                   ORDER BY hashtextextended(j.group_key, 0), j.ready_seq
                                   LIMIT 1) AS s ON true
                           OFFSET 0) AS k  -- OFFSET 0: one probe per step, not one per use of k.h
                     -- With a rate per key, the key's window (pgq._rate_window, inlined here: two
                     -- probes of rate_starts_key_idx in this statement, no call per step).
                     LEFT JOIN LATERAL (
                          SELECT r.used
                            FROM pgq._rate_window(_keyed_candidates.entrypoint, k.h,
                                                  _keyed_candidates.at - _keyed_candidates.rate_period) AS r
                           WHERE _keyed_candidates.key_rate IS NOT NULL AND k.h IS NOT NULL
                          OFFSET 0) AS r ON true
                    OFFSET 0) AS nx                 -- and one room per step, not one per use of nx.room
             WHERE w.n < 100 + 4 * _keyed_candidates.quota
               AND w.found < v_target
               AND NOT (w.h IS NULL AND w.n > 0 AND nx.h IS NULL)             -- no key at all
               AND NOT coalesce(w.wrapped AND nx.h >= w.first, false)          -- round the ring once
        ), met AS MATERIALIZED (
            SELECT w.n, w.h, w.room, w.id, w.slot, w.tid, w.k, w.wrapped, w.first
              FROM walk w
             WHERE w.n > v_n
        ), running AS MATERIALIZED (
            -- The running jobs of the keys met with rate room (the only ones whose room is
            -- used): one range scan of jobs_key_running_idx over their hashes (two when the
            -- pass went round the end of the ring), so the count reads the running jobs of the
            -- keys visited, not every running job of the entrypoint.
            SELECT hashtextextended(r.group_key, 0) AS h, count(*)::int AS n
              FROM (SELECT min(m.h) AS lo, max(m.h) AS hi
                      FROM met m
                     WHERE m.h IS NOT NULL AND m.room > 0
                       AND _keyed_candidates.key_limit IS NOT NULL
                     GROUP BY m.wrapped) g
             CROSS JOIN LATERAL (
                   SELECT r.group_key
                     FROM pgq.jobs r
                    WHERE hashtext(r.entrypoint) = v_ep
                      AND r.entrypoint = _keyed_candidates.entrypoint
                      AND r.lease IS NOT NULL  -- running (jobs_key_running_idx's predicate)
                      AND r.group_key IS NOT NULL
                      AND r.slot <> 4
                      AND r.slot IN (v_held[1], v_held[2], v_held[3], v_held[4])  -- (none: pruned, v_held)
                      AND hashtextextended(r.group_key, 0) >= g.lo
                      AND hashtextextended(r.group_key, 0) <= g.hi
                   OFFSET 0) r  -- (a range probe per group, not a join over every running job)
             GROUP BY 1
        ), roomed AS MATERIALIZED (
            -- Every step met, with its key's room (NULL for the end of the ring's step).
            SELECT m.n, m.h, m.id, m.slot, m.tid, m.k, m.wrapped, m.first,
                   CASE WHEN m.h IS NOT NULL
                        THEN least(m.room, coalesce(_keyed_candidates.key_limit - coalesce(r.n, 0), c_big)) END AS room,
                   m.h IS NOT NULL AND m.room > 0 AND _keyed_candidates.key_limit - coalesce(r.n, 0) <= 0 AS capped
              FROM met m
              LEFT JOIN running r ON r.h = m.h
        ), picked AS MATERIALIZED (
            -- Round 1 locks the job the walk found for each key with room where the walk read it
            -- (a TID scan of its slot, its id and status checked again; no index probe). A job
            -- locked by someone else (a cancel, the carry) is skipped, and so is one updated since
            -- this statement's snapshot (its new version is elsewhere): that key waits for the
            -- next claim.
            SELECT m.n, m.h, m.room, m.k, j.id, j.ready_seq
              FROM roomed m
             CROSS JOIN LATERAL (
                   SELECT j.id, j.ready_seq
                     FROM pgq.jobs j
                    WHERE j.ctid = m.tid AND j.id = m.id
                      AND j.slot = m.slot AND j.slot <> 4
                      AND j.status = c_queued
                      FOR UPDATE SKIP LOCKED) AS j
             WHERE m.room > 0
             ORDER BY m.n
             LIMIT v_need
        )
        -- One pass over roomed (every step met) and one over picked (every subquery here is
        -- prepared on each call), each read in walk order: the arrays are aggregated in that
        -- order, the last element is the last step's (one sort, not one per ordered aggregate;
        -- picked is in walk order already).
        SELECT mr.keys, mr.rooms, mr.capped, mr.ends, mr.n, mr.last, mr.wrapped, mr.first,
               pp.last AS served, coalesce(pp.ids, '{}') AS ids, coalesce(pp.seqs, '{}') AS seqs,
               coalesce(pp.hashes, '{}') AS hashes, coalesce(pp.rooms, '{}') AS krooms,
               coalesce(pp.keys, '{}') AS gkeys
          INTO v_got
          FROM (SELECT bool_or(m.h IS NULL) AS ends, max(m.n) AS n,
                       (array_agg(m.h))[count(*)] AS last,
                       (array_agg(m.wrapped))[count(*)] AS wrapped,
                       (array_agg(m.first))[count(*)] AS first,
                       array_agg(m.h) FILTER (WHERE m.h IS NOT NULL) AS keys,
                       array_agg(m.room) FILTER (WHERE m.h IS NOT NULL) AS rooms,
                       count(*) FILTER (WHERE m.capped) AS capped
                  FROM (SELECT m.n, m.h, m.wrapped, m.first, m.room, m.capped
                          FROM roomed m ORDER BY m.n) AS m) AS mr,
               (SELECT array_agg(p.id) AS ids, array_agg(p.ready_seq) AS seqs,
                       array_agg(p.h) AS hashes, array_agg(p.room) AS rooms,
                       array_agg(p.k) AS keys, (array_agg(p.h))[count(*)] AS last
                  FROM picked p) AS pp;
        EXIT WHEN v_got.n IS NULL;  -- no key visited: the walk is over
        v_keys := v_keys || v_got.keys;
        v_rooms := v_rooms || v_got.rooms;
        v_ends := v_ends OR coalesce(v_got.ends, false);
        v_ids := v_ids || v_got.ids;
        v_seqs := v_seqs || v_got.seqs;
        v_hashes := v_hashes || v_got.hashes;
        v_kroom := v_kroom || v_got.krooms;
        v_gkeys := v_gkeys || v_got.gkeys;
        v_last := v_got.last;
        v_served := coalesce(v_got.served, v_served);
        v_need := v_need - cardinality(v_got.ids);
        -- Another pass only when keys met were at their concurrency limit and room is left;
        -- it walks twice as far as this one (while keys are full, a claim's passes stay few).
        EXIT WHEN v_got.capped = 0 OR v_need <= 0;
        v_target := least(2 * v_target, 100 + 4 * _keyed_candidates.quota);
        v_h := v_got.last;
        v_n := v_got.n;
        v_wrapped := v_got.wrapped;
        v_first := v_got.first;
    END LOOP;
    v_last := coalesce(v_served, v_last);
    v_left := v_left - cardinality(v_ids);
    -- The end of the ring was passed: the jobs without a key get their turn (one job, or all
    -- that is left when the walk went round), among the first 100 queued jobs of the lane.
    -- (Their budget under a rate per key is read only then.)
    v_free := c_big;
    IF v_ends AND v_left > 0 AND _keyed_candidates.key_rate IS NOT NULL THEN
        v_free := _keyed_candidates.key_rate
                  - coalesce((SELECT w.used
                                FROM pgq._rate_window(_keyed_candidates.entrypoint, c_min,
                                                      _keyed_candidates.at - _keyed_candidates.rate_period) AS w),
                             0)::int;
    END IF;
    IF v_ends AND v_left > 0 AND v_free > 0 THEN
        SELECT array_agg(q.id ORDER BY q.ready_seq) AS ids, array_agg(q.ready_seq ORDER BY q.ready_seq) AS seqs
          INTO v_got
          FROM (SELECT j.id, j.ready_seq
                  FROM pgq.jobs j
                 WHERE j.id = ANY (ARRAY(SELECT w.id
                                          FROM pgq.jobs w
                                         WHERE w.entrypoint = _keyed_candidates.entrypoint
                                           AND w.priority = _keyed_candidates.priority
                                           AND w.status = 'queued'
                                           AND w.slot <> 4
                                           AND w.ready_seq > _keyed_candidates.cursor
                                         ORDER BY w.ready_seq
                                         LIMIT 100))
                   AND j.group_key IS NULL
                   AND j.status = c_queued AND j.slot <> 4
                   AND j.run_at <= _keyed_candidates.at
                 ORDER BY j.ready_seq
                 LIMIT least(CASE WHEN v_keys IS NULL THEN v_left ELSE 1 END, v_free)
                   FOR UPDATE SKIP LOCKED) AS q;
        IF v_got.ids IS NOT NULL THEN
            v_ids := v_ids || v_got.ids;
            v_seqs := v_seqs || v_got.seqs;
            -- With a rate per key, the jobs without one are capped across lanes as one key.
            v_hashes := v_hashes || array_fill(CASE WHEN _keyed_candidates.key_rate IS NOT NULL THEN c_min END,
                                               ARRAY[cardinality(v_got.ids)]);
            v_kroom := v_kroom || array_fill(CASE WHEN _keyed_candidates.key_rate IS NOT NULL THEN v_free END,
                                             ARRAY[cardinality(v_got.ids)]);
            v_gkeys := v_gkeys || array_fill(NULL::text, ARRAY[cardinality(v_got.ids)]);
            v_left := v_left - cardinality(v_got.ids);
            v_last := c_min;
        END IF;
    END IF;
    -- Round 2, when every key was met and room is left: each key gives what room it has left,
    -- keys in walk order, oldest jobs first.
    IF v_left > 0 AND v_keys IS NOT NULL THEN
        SELECT array_agg(q.id ORDER BY q.n, q.ready_seq) AS ids, array_agg(q.ready_seq ORDER BY q.n, q.ready_seq) AS seqs,
               array_agg(q.h ORDER BY q.n, q.ready_seq) AS hashes, array_agg(q.room ORDER BY q.n, q.ready_seq) AS rooms,
               array_agg(q.group_key ORDER BY q.n, q.ready_seq) AS gkeys
          INTO v_got
          FROM (SELECT k.n, k.h, k.room, j.id, j.ready_seq, j.group_key
                  FROM unnest(v_keys, v_rooms) WITH ORDINALITY AS k(h, room, n)
                 CROSS JOIN LATERAL (
                       SELECT j.id, j.ready_seq, j.group_key
                         FROM pgq.jobs j
                        WHERE hashtext(j.entrypoint) = v_ep
                          AND j.entrypoint = _keyed_candidates.entrypoint
                          AND j.priority = _keyed_candidates.priority
                          AND j.status = 'queued'
                          AND j.group_key IS NOT NULL
                          AND j.slot <> 4
                          AND hashtextextended(j.group_key, 0) >= k.h  -- (as in round 1)
                          AND hashtextextended(j.group_key, 0) <= k.h
                          AND j.ready_seq > _keyed_candidates.cursor
                          AND j.run_at <= _keyed_candidates.at
                          AND j.id <> ALL (v_ids)  -- our own row locks are not skipped
                        ORDER BY hashtextextended(j.group_key, 0), j.ready_seq
                        LIMIT least(k.room - 1, v_left)
                          FOR UPDATE SKIP LOCKED) AS j
                 WHERE k.room > 1
                 ORDER BY k.n, j.ready_seq
                 LIMIT v_left) AS q;
        IF v_got.ids IS NOT NULL THEN
            v_ids := v_ids || v_got.ids;
            v_seqs := v_seqs || v_got.seqs;
            v_hashes := v_hashes || v_got.hashes;
            v_kroom := v_kroom || v_got.rooms;
            v_gkeys := v_gkeys || v_got.gkeys;
        END IF;
    END IF;
    -- The next claim goes on after the last key served (or, when none was, the last visited).
    v_last := setval(_keyed_candidates.turn_seq, coalesce(v_last, c_min));  -- (an expression: no statement)
    RETURN QUERY SELECT u.id, u.s, u.h, u.r, u.k FROM unnest(v_ids, v_seqs, v_hashes, v_kroom, v_gkeys) AS u(id, s, h, r, k);
END
$$;
COMMENT ON FUNCTION pgq._keyed_candidates(text, int, bigint, regclass, int, int, int, interval, timestamptz) IS
    'Private. Candidates of one lane of a key-limited entrypoint for pgq.claim: group keys in turn (hash order from the last served), each within its room under key_concurrency_limit and its rate per key, the jobs without a key after the last key; locked SKIP LOCKED.';
