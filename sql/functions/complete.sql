-- pgq.complete(worker_id, ids, leases, outcomes, details, at)
-- Contract: ends the attempts this worker still owns under those leases. The worker reports
--   what it observed; SQL decides what follows and answers it, one row per job accepted:
--   id, status (what SQL decided), attempt (the attempt that ended), max_attempts, and for a
--   job going back to the queue run_at and retry_in_s (seconds from at, on the server's clock).
--   A stale lease (the job was re-claimed, or is gone) is ignored, never applied, and gets no row.
--   outcomes, element i for job i:
--   'successful'  the handler returned: history as successful (also when a cancel was
--                 requested meanwhile: the work is done).
--   'failed'      the handler raised: the entrypoint's retry policy decides. While
--                 attempt < max_attempts and no cancel was requested, status 'retry': queued
--                 again after pgq._retry_delay (backoff_base * 2^(attempt-1), capped at
--                 backoff_max, with equal jitter; or details->'retry_after' seconds when the
--                 handler asked for it; due later: status 'scheduled', see pgq.claim). Else history
--                 as 'failed' (dead), or 'canceled' when a cancel
--                 was requested.
--   'interrupted' the worker cut the attempt off (shutdown): status 'retry', queued again at
--                 once (run_at = at), and the attempt is not counted (as pgq.release); the
--                 error list notes it. A job whose cancel was requested ends 'canceled'.
--   'canceled'    the handler gave up because the job was canceled (or chose to): history as
--                 canceled.
--   'snoozed'     the handler asked to run again later without using an attempt:
--                 details->'snooze' seconds (a number from 0 to 31536000) after at, on the
--                 server's clock: status 'snoozed', due then (queued, or scheduled when later),
--                 the attempt not counted, the snooze noted in the error list (outcome and
--                 decision 'snoozed'). A job that already snoozed max_snoozes times (its
--                 entrypoint's, default 100) has this snooze counted as a failed attempt
--                 (the retry policy, with the snooze as its retry_after). A job whose cancel
--                 was requested ends 'canceled'.
--   'fatal'       the job can never succeed (a payload its handler cannot decode, a permanent
--                 error): dead at once, history as 'failed' whatever attempts are left (or
--                 'canceled' when a cancel was requested), the error list notes outcome 'fatal'.
--   An 'interrupted' attempt of a job whose last max_interruptions attempts (its entrypoint's,
--   default 3) were all interrupted counts: it is treated as 'failed' (retry policy, dead on
--   the last attempt), its details marked interrupted: true with a message saying why, so a
--   job that hangs across restarts ends dead.
--   details: one JSON array (element i for job i, JSON null for none) or NULL for none at all;
--   each failure's details are kept in the job's error list. at NULL means now().
--   Idempotent: repeating a call whose answer was lost (the connection dropped after the
--   commit) finds the results already applied under the same leases, answers the same
--   decisions (a retry's run_at as stored) and changes nothing.
-- Locking: row locks on the owned jobs, taken in id order; waits only for a claimer that holds
--   one of them at this instant, and then sees its new lease (and leaves the job alone).
-- Errors: PQ009, PQ003 (arguments), PQ004 unknown outcome, PQ009 bad details, retry_after or
--   snooze.
CREATE OR REPLACE FUNCTION pgq.complete(
    worker_id  uuid,
    ids        bigint[],
    leases     bigint[],
    outcomes   text[],
    details    jsonb       DEFAULT NULL,
    at         timestamptz DEFAULT NULL
)
RETURNS TABLE (id bigint, status text, attempt int, max_attempts int, run_at timestamptz,
               retry_in_s float8)
LANGUAGE plpgsql
VOLATILE
SECURITY DEFINER
SET search_path = pg_catalog, pgq, pg_temp
-- Generic plans: planning these statements on every call cost more than running them. No JIT:
-- a generic plan's estimates (unknown LIMIT, large backlog) would compile it on every call.
SET plan_cache_mode = force_generic_plan
SET jit = off
-- Index scans by id (jobs_id_idx): a generic plan made while a partition was empty would
-- otherwise scan it sequentially once per job after it has filled.
SET enable_seqscan = off
-- The input arrays meet pgq.jobs in hash joins only (docs/decisions/0007): one scan by id per
-- partition, whatever the statistics; a nested loop would probe every partition once per job.
SET enable_nestloop = off
SET enable_mergejoin = off
AS $$
#variable_conflict use_column
DECLARE
    v_now      timestamptz := coalesce(complete.at, now());
    v_n        int := pgq._check_batch(complete.worker_id, complete.ids, complete.leases);
    v_details  jsonb[];
    v_outcomes text[] := complete.outcomes;  -- what is decided on (see 'interrupted', 'snoozed')
    v_bad      record;
    -- The answer, built as parallel arrays (one element per job accepted).
    a_id       bigint[] := '{}';
    a_status   text[] := '{}';
    a_attempt  int[] := '{}';
    a_max      int[] := '{}';
    a_run      timestamptz[] := '{}';
    -- The jobs still to decide (all at first; in the second round, those the first missed).
    r_ids      bigint[];
    r_leases   bigint[];
    r_outcomes text[];
    r_details  jsonb[];
    v_look    int;
    v_slots   smallint[];  -- the slots the jobs are looked for in (their leases' first)
    v_retry    boolean;  -- failures or interruptions among the jobs still to decide
    v_decided  bigint[];   -- failures and interruptions locked this round
    v_later    bigint[];   -- ... retried later (moved to jobs_scheduled)
    v_later_s  float8[];
    v_later_d  jsonb[];
    v_later_o  text[];
    v_now_ids  bigint[];   -- ... retried at once (queued in place)
    v_now_s    float8[];
    v_now_d    jsonb[];
    v_now_o    text[];
    v_eps      text[];
    -- The status as a variable where jobs are found by id (docs/architecture.md, execution settings).
    c_running  constant text := 'running';
BEGIN
    -- The checking helpers are called only when there is something to check: each call of a
    -- function with SET clauses costs more than the check (docs/architecture.md).
    IF complete.at IS NOT NULL THEN
        PERFORM pgq._check_time(complete.at, 'at');
    END IF;
    IF complete.outcomes IS NULL THEN
        RAISE EXCEPTION 'outcomes must not be NULL' USING ERRCODE = 'PQ009';
    END IF;
    IF cardinality(complete.outcomes) <> v_n THEN
        RAISE EXCEPTION 'outcomes has % elements but ids has %', coalesce(cardinality(complete.outcomes)::text, 'NULL'), v_n
            USING ERRCODE = 'PQ003';
    END IF;
    IF complete.details IS NOT NULL THEN
        IF jsonb_typeof(complete.details) <> 'array' THEN
            RAISE EXCEPTION 'details must be a JSON array (element i for job i) or NULL, got %', jsonb_typeof(complete.details)
                USING ERRCODE = 'PQ009';
        END IF;
        IF jsonb_array_length(complete.details) <> v_n THEN
            RAISE EXCEPTION 'details has % elements but ids has %', jsonb_array_length(complete.details), v_n
                USING ERRCODE = 'PQ003';
        END IF;
        v_details := ARRAY(SELECT nullif(e.value, 'null'::jsonb)
                             FROM jsonb_array_elements(complete.details) WITH ORDINALITY AS e(value, ord)
                            ORDER BY e.ord);
    END IF;
    IF v_details IS NOT NULL OR array_ndims(complete.outcomes) > 1 THEN
        PERFORM pgq._check_details(complete.outcomes, v_details);
    END IF;
    SELECT u.s, u.d, u.ord INTO v_bad
      FROM unnest(complete.outcomes, v_details) WITH ORDINALITY AS u(s, d, ord)
     WHERE u.s IS NULL OR u.s NOT IN ('successful', 'failed', 'interrupted', 'canceled', 'snoozed', 'fatal')
        OR (jsonb_typeof(u.d) = 'object' AND u.d ? 'retry_after'
            AND (jsonb_typeof(u.d -> 'retry_after') <> 'number'
                 OR (u.d ->> 'retry_after')::numeric NOT BETWEEN 0 AND 31536000))
        OR (u.s = 'snoozed'
            AND (jsonb_typeof(u.d -> 'snooze') IS DISTINCT FROM 'number'
                 OR (u.d ->> 'snooze')::numeric NOT BETWEEN 0 AND 31536000))
     ORDER BY u.ord
     LIMIT 1;
    IF FOUND THEN
        IF v_bad.s IS NULL OR v_bad.s NOT IN ('successful', 'failed', 'interrupted', 'canceled', 'snoozed', 'fatal') THEN
            RAISE EXCEPTION 'unknown outcome % at position %: use successful, failed, interrupted, canceled, snoozed or fatal',
                coalesce(quote_literal(v_bad.s), 'NULL'), v_bad.ord
                USING ERRCODE = 'PQ004';
        END IF;
        IF v_bad.s = 'snoozed' AND (jsonb_typeof(v_bad.d -> 'snooze') IS DISTINCT FROM 'number'
                                    OR (v_bad.d ->> 'snooze')::numeric NOT BETWEEN 0 AND 31536000) THEN
            RAISE EXCEPTION 'snooze at position % must be a number of seconds from 0 to 31536000 (details->''snooze''), got %',
                v_bad.ord, coalesce((v_bad.d -> 'snooze')::text, 'nothing')
                USING ERRCODE = 'PQ009';
        END IF;
        RAISE EXCEPTION 'retry_after at position % must be a number of seconds from 0 to 31536000, got %',
            v_bad.ord, v_bad.d -> 'retry_after'
            USING ERRCODE = 'PQ009';
    END IF;

    -- Interruptions and snoozes past their entrypoint's bound count as failed attempts: decided
    -- on as 'failed', with a note in their details (a read of the jobs still owned; the locked
    -- reads below check the leases again).
    IF 'interrupted' = ANY (complete.outcomes) OR 'snoozed' = ANY (complete.outcomes) THEN
        -- The owned jobs meet the input in a hash join (docs/decisions/0007), not a probe of
        -- every partition per input row.
        SELECT array_agg(CASE WHEN x.note IS NOT NULL THEN 'failed' ELSE x.s END ORDER BY x.ord),
               array_agg(CASE WHEN x.note IS NOT NULL THEN coalesce(x.d, '{}'::jsonb) || x.note ELSE x.d END ORDER BY x.ord)
          INTO v_outcomes, v_details
          FROM (SELECT u.s, u.d, u.ord,
                       CASE WHEN u.s = 'interrupted' AND (o.k).interrupted >= o.max_interruptions THEN
                                 jsonb_build_object('interrupted', true, 'message', format(
                                     'interrupted %s times in a row (max_interruptions %s), so this interruption counts as a failed attempt%s',
                                     (o.k).interrupted + 1, o.max_interruptions,
                                     coalesce(': ' || (u.d ->> 'message'), '')))
                            WHEN u.s = 'snoozed' AND (o.k).snoozed >= o.max_snoozes THEN
                                 jsonb_build_object('snoozed', true, 'retry_after', u.d -> 'snooze', 'message', format(
                                     'snoozed %s times (max_snoozes %s), so this snooze counts as a failed attempt',
                                     (o.k).snoozed + 1, o.max_snoozes))
                       END AS note
                  FROM unnest(complete.outcomes, v_details, complete.ids, complete.leases)
                       WITH ORDINALITY AS u(s, d, id, lease, ord)
                  LEFT JOIN (SELECT j.id, j.lease, c.max_interruptions, c.max_snoozes,
                                    pgq._streaks(j.errors) AS k
                               FROM pgq.jobs j
                               JOIN pgq.entrypoints c ON c.entrypoint = j.entrypoint
                              WHERE j.id = ANY (complete.ids)
                                AND j.status = c_running AND j.slot <> 4
                                AND j.worker_id = complete.worker_id) AS o
                         ON o.id = u.id AND o.lease = u.lease AND u.s IN ('interrupted', 'snoozed')) AS x;
    END IF;

    -- A stale lease misses every look and gets no row.
    r_ids := complete.ids;
    r_leases := complete.leases;
    r_outcomes := v_outcomes;
    r_details := v_details;
    -- The first look reads only the slots the leases name (the claim put each job's slot in
    -- its lease: docs/architecture.md#leases-carry-the-slot); the jobs it misses (carried to
    -- another slot since, claimed before leases carried slots, or stale) are looked for twice
    -- more in every slot.
    IF v_n = 1 THEN
        v_slots := ARRAY[(complete.leases[1] % 4)::smallint];
    ELSE
        v_slots := ARRAY(SELECT DISTINCT (l % 4)::smallint FROM unnest(complete.leases) AS l);
    END IF;
    FOR v_look IN 0..2 LOOP  -- look twice: docs/architecture.md#look-twice (after a look by slot)
        IF v_look = 1 THEN
            v_slots := '{0,1,2,3}';
        END IF;
        v_decided := '{}';
        v_retry := 'failed' = ANY (r_outcomes) OR 'interrupted' = ANY (r_outcomes)
                   OR 'snoozed' = ANY (r_outcomes) OR 'fatal' = ANY (r_outcomes);
        -- The jobs are locked in id order first (every function that locks several jobs takes
        -- them in id order, so two of them never deadlock; the archive's DELETE would lock in
        -- the order of its plan). Successes and cancellations alone: a bare locked read by id
        -- (the archive checks the leases). One job alone needs no order.
        IF NOT v_retry AND cardinality(r_ids) > 1 THEN
            PERFORM 1
               FROM (SELECT j.id FROM pgq.jobs j
                      WHERE j.id = ANY (r_ids)
                        AND (j.slot = v_slots[1] OR j.slot = v_slots[2] OR j.slot = v_slots[3] OR j.slot = v_slots[4])
                        AND j.status = c_running AND j.slot <> 4
                      ORDER BY j.id
                        FOR UPDATE) AS l;
        END IF;
        -- With failures or interrupted attempts, the locked read of the jobs this worker owns
        -- under these leases also decides those (lease-fenced), so that a row carried
        -- meanwhile cannot reach the archive below with a failure it should retry: back to
        -- the queue with attempts left, and interrupted attempts (not counted).
        IF v_retry THEN
            SELECT coalesce(array_agg(d.id ORDER BY d.id) FILTER (WHERE d.outcome IN ('failed', 'interrupted', 'snoozed', 'fatal')), '{}'),
                   coalesce(array_agg(d.id ORDER BY d.id) FILTER (WHERE d.retry AND d.delay > 0), '{}'),
                   coalesce(array_agg(d.id ORDER BY d.id) FILTER (WHERE d.retry AND d.delay <= 0), '{}'),
                   coalesce(array_agg(d.delay ORDER BY d.id) FILTER (WHERE d.retry AND d.delay > 0), '{}'),
                   coalesce(array_agg(d.delay ORDER BY d.id) FILTER (WHERE d.retry AND d.delay <= 0), '{}'),
                   coalesce(array_agg(d.details ORDER BY d.id) FILTER (WHERE d.retry AND d.delay > 0), '{}'),
                   coalesce(array_agg(d.details ORDER BY d.id) FILTER (WHERE d.retry AND d.delay <= 0), '{}'),
                   coalesce(array_agg(d.outcome ORDER BY d.id) FILTER (WHERE d.retry AND d.delay <= 0), '{}'),
                   coalesce(array_agg(d.outcome ORDER BY d.id) FILTER (WHERE d.retry AND d.delay > 0), '{}'),
                   array_agg(DISTINCT d.entrypoint) FILTER (WHERE d.retry AND d.delay <= 0)
              INTO v_decided, v_later, v_now_ids, v_later_s, v_now_s, v_later_d, v_now_d, v_now_o, v_later_o, v_eps
              FROM (SELECT j.id, j.entrypoint, i.outcome, i.details,
                           i.outcome IN ('failed', 'interrupted', 'snoozed') AND NOT j.cancel_requested
                           AND (i.outcome IN ('interrupted', 'snoozed') OR j.attempt < c.max_attempts) AS retry,
                           -- The delay in seconds: none for an interrupted attempt, the asked
                           -- one for a snooze, else the retry policy (inlined).
                           CASE WHEN i.outcome = 'failed'
                                THEN pgq._retry_delay(j.attempt, c.backoff_base, c.backoff_max, i.details)
                                WHEN i.outcome = 'snoozed' THEN (i.details ->> 'snooze')::float8
                                WHEN i.outcome = 'interrupted' THEN 0::float8 END AS delay
                      FROM unnest(r_ids, r_leases, r_outcomes, r_details) AS i(id, lease, outcome, details)
                      JOIN pgq.jobs j ON j.id = i.id
                      JOIN pgq.entrypoints c ON c.entrypoint = j.entrypoint
                     WHERE j.id = ANY (r_ids)
                       AND (j.slot = v_slots[1] OR j.slot = v_slots[2] OR j.slot = v_slots[3] OR j.slot = v_slots[4])
                       AND j.lease = i.lease
                       AND j.status = c_running AND j.slot <> 4
                       AND j.worker_id = complete.worker_id
                     ORDER BY j.id
                       FOR UPDATE OF j) AS d;

            -- Due now (no delay): queued again in place, with a new ready number behind the
            -- fence (the back of its lane).
            IF cardinality(v_now_ids) > 0 THEN
                PERFORM pgq._ready_lock(v_eps);
                WITH retried AS (
                    UPDATE pgq.jobs j
                       SET status = 'queued',
                           ready_seq = i.seq,
                           run_at = v_now + make_interval(secs => i.delay),
                           attempt = CASE WHEN i.outcome IN ('interrupted', 'snoozed') THEN j.attempt - 1 ELSE j.attempt END,
                           lease = NULL,
                           worker_id = NULL,
                           started_at = NULL,
                           heartbeat_at = NULL,
                           claim_request = NULL,
                           errors = j.errors || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                                        'attempt', j.attempt, 'at', v_now, 'lease', j.lease,
                                        'worker_id', j.worker_id,
                                        'outcome', CASE WHEN i.outcome IN ('interrupted', 'snoozed') THEN i.outcome END,
                                        'decision', CASE WHEN i.outcome = 'snoozed' THEN 'snoozed' ELSE 'retry' END,
                                        'run_at', v_now + make_interval(secs => i.delay)))
                                        || jsonb_build_object('details', i.details))
                      -- The ready numbers drawn here, in id order (after the sort), whatever the join.
                      FROM (SELECT u.id, u.delay, u.details, u.outcome, nextval('pgq.ready_seq') AS seq
                              FROM unnest(v_now_ids, v_now_s, v_now_d, v_now_o)
                                   WITH ORDINALITY AS u(id, delay, details, outcome, ord)
                             ORDER BY u.ord) AS i,
                           pgq.entrypoints c
                     WHERE j.id = i.id
                       AND j.id = ANY (v_now_ids)
                       AND j.status = c_running AND j.slot <> 4
                       AND c.entrypoint = j.entrypoint
                    RETURNING j.id, j.attempt, i.outcome, c.max_attempts, j.run_at
                )
                SELECT a_id || coalesce(array_agg(r.id), '{}'),
                       a_status || coalesce(array_agg(CASE WHEN r.outcome = 'snoozed' THEN 'snoozed' ELSE 'retry' END), '{}'),
                       a_attempt || coalesce(array_agg(CASE WHEN r.outcome IN ('interrupted', 'snoozed') THEN r.attempt + 1 ELSE r.attempt END), '{}'),
                       a_max || coalesce(array_agg(r.max_attempts), '{}'), a_run || coalesce(array_agg(r.run_at), '{}')
                  INTO a_id, a_status, a_attempt, a_max, a_run
                  FROM retried r;
            END IF;

            -- Due later: 'scheduled', moved to jobs_scheduled (slot 4) as DELETE ... RETURNING +
            -- INSERT of the same row (an UPDATE of the partition key would fail a concurrent
            -- waiter); pgq._promote gives it a ready number at run_at.
            IF cardinality(v_later) > 0 THEN
                WITH moved AS (
                    DELETE FROM pgq.jobs j
                     USING unnest(v_later, v_later_s, v_later_d, v_later_o) AS i(id, delay, details, outcome)
                     WHERE j.id = i.id
                       AND j.id = ANY (v_later)
                       AND j.status = c_running AND j.slot <> 4
                    RETURNING j.*, i.delay, i.details AS retry_details, i.outcome AS retry_outcome
                ), ins AS (
                    INSERT INTO pgq.jobs (id, entrypoint, status, priority, run_at, enqueued_at, attempt,
                                          payload, headers, dedupe_key, cancel_requested, errors, timeout, slot, group_key)
                    SELECT m.id, m.entrypoint, 'scheduled', m.priority, v_now + make_interval(secs => m.delay),
                           m.enqueued_at, CASE WHEN m.retry_outcome = 'snoozed' THEN m.attempt - 1 ELSE m.attempt END,
                           m.payload, m.headers, m.dedupe_key, m.cancel_requested,
                           m.errors || jsonb_build_array(jsonb_strip_nulls(jsonb_build_object(
                               'attempt', m.attempt, 'at', v_now, 'lease', m.lease,
                               'worker_id', m.worker_id,
                               'outcome', CASE WHEN m.retry_outcome = 'snoozed' THEN 'snoozed' END,
                               'decision', CASE WHEN m.retry_outcome = 'snoozed' THEN 'snoozed' ELSE 'retry' END,
                               'run_at', v_now + make_interval(secs => m.delay)))
                               || jsonb_build_object('details', m.retry_details)),
                           m.timeout, 4, m.group_key
                      FROM moved m
                     ORDER BY m.id
                    RETURNING id, attempt, entrypoint, run_at, errors -> -1 ->> 'decision' AS decision
                )
                SELECT a_id || coalesce(array_agg(r.id), '{}'),
                       a_status || coalesce(array_agg(CASE WHEN r.decision = 'snoozed' THEN 'snoozed' ELSE 'retry' END), '{}'),
                       a_attempt || coalesce(array_agg(CASE WHEN r.decision = 'snoozed' THEN r.attempt + 1 ELSE r.attempt END), '{}'),
                       a_max || coalesce(array_agg(c.max_attempts), '{}'), a_run || coalesce(array_agg(r.run_at), '{}')
                  INTO a_id, a_status, a_attempt, a_max, a_run
                  FROM ins r
                  JOIN pgq.entrypoints c ON c.entrypoint = r.entrypoint;
            END IF;
        END IF;

        -- Everything else this worker still owns moves to history: successful and canceled
        -- outcomes (lease-fenced by _archive itself), and the failures, fatal outcomes,
        -- interruptions and snoozes locked above that may not run again (no attempts left, or
        -- canceled meanwhile). An interrupted or snoozed job that gets here was canceled
        -- meanwhile.
        SELECT a_id || coalesce(array_agg(a.id), '{}'), a_status || coalesce(array_agg(a.status), '{}'),
               a_attempt || coalesce(array_agg(a.attempt), '{}'), a_max || coalesce(array_agg(c.max_attempts), '{}'),
               a_run || coalesce(array_agg(NULL::timestamptz), '{}')
          INTO a_id, a_status, a_attempt, a_max, a_run
          FROM (SELECT array_agg(u.id ORDER BY u.ord) AS ids, array_agg(u.lease ORDER BY u.ord) AS leases,
                       array_agg(u.outcome ORDER BY u.ord) AS outcomes,
                       array_agg(u.details ORDER BY u.ord) AS details
                  FROM unnest(r_ids, r_leases, r_outcomes, r_details) WITH ORDINALITY AS u(id, lease, outcome, details, ord)
                 WHERE u.outcome IN ('successful', 'canceled')
                    OR (u.id = ANY (v_decided) AND u.id <> ALL (a_id))) AS x
         CROSS JOIN LATERAL pgq._archive(x.ids, x.outcomes, x.details, v_now, complete.worker_id, x.leases, v_slots) AS a
          JOIN pgq.entrypoints c ON c.entrypoint = a.entrypoint
         WHERE x.ids IS NOT NULL;

        EXIT WHEN cardinality(a_id) >= v_n OR v_look = 2;
        -- The jobs missed so far, for the next look.
        SELECT array_agg(u.id ORDER BY u.ord), array_agg(u.lease ORDER BY u.ord),
               array_agg(u.outcome ORDER BY u.ord), array_agg(u.details ORDER BY u.ord)
          INTO r_ids, r_leases, r_outcomes, r_details
          FROM unnest(complete.ids, complete.leases, v_outcomes, v_details)
               WITH ORDINALITY AS u(id, lease, outcome, details, ord)
         WHERE u.id <> ALL (a_id);
    END LOOP;

    -- A repeated call (its first answer was lost with the connection) finds its own results
    -- already applied under the same lease: the same decisions are answered, nothing changes.
    IF cardinality(a_id) < v_n THEN
        SELECT a_id || coalesce(array_agg(x.id), '{}'), a_status || coalesce(array_agg(x.status), '{}'),
               a_attempt || coalesce(array_agg(x.attempt), '{}'), a_max || coalesce(array_agg(x.max_attempts), '{}'),
               a_run || coalesce(array_agg(x.run_at), '{}')
          INTO a_id, a_status, a_attempt, a_max, a_run
          FROM (-- Ended by that attempt: its history row (the attempt as answered then: an
                -- interrupted one is in the error list, not in the count).
                SELECT i.id, h.status, coalesce((e.value ->> 'attempt')::int, h.attempt) AS attempt,
                       c.max_attempts, NULL::timestamptz AS run_at
                  FROM unnest(complete.ids, complete.leases) AS i(id, lease)
                  JOIN pgq.job_history h ON h.id = i.id AND h.lease = i.lease AND h.worker_id = complete.worker_id
                                        AND h.id = ANY (complete.ids)  -- by id: no nested loops here
                  JOIN pgq.entrypoints c ON c.entrypoint = h.entrypoint
                  LEFT JOIN LATERAL (SELECT x.value FROM jsonb_array_elements(h.errors) AS x(value)
                                      WHERE x.value -> 'lease' = to_jsonb(i.lease) LIMIT 1) AS e ON true
                 WHERE i.id <> ALL (a_id)
                UNION ALL
                -- Queued again by that attempt (and perhaps ended since under another lease, or
                -- requeued): its error entry of that lease and worker says what was decided.
                SELECT i.id, e.value ->> 'decision', (e.value ->> 'attempt')::int, c.max_attempts,
                       CASE WHEN e.value ->> 'decision' IN ('retry', 'snoozed') THEN (e.value ->> 'run_at')::timestamptz END
                  FROM unnest(complete.ids, complete.leases) AS i(id, lease)
                  JOIN (SELECT j.id, j.entrypoint, j.lease, j.errors FROM pgq.jobs j WHERE j.id = ANY (complete.ids)
                        UNION ALL
                        SELECT h.id, h.entrypoint, h.lease, h.errors FROM pgq.job_history h
                         WHERE h.id = ANY (complete.ids)) AS o
                       ON o.id = i.id AND o.lease IS DISTINCT FROM i.lease
                  JOIN pgq.entrypoints c ON c.entrypoint = o.entrypoint
                 CROSS JOIN LATERAL (SELECT x.value FROM jsonb_array_elements(o.errors) AS x(value)
                                      WHERE x.value -> 'lease' = to_jsonb(i.lease)
                                        AND x.value ->> 'worker_id' = complete.worker_id::text
                                        AND x.value ? 'decision'
                                      LIMIT 1) AS e
                 WHERE i.id <> ALL (a_id)) AS x;
    END IF;

    -- One row per job accepted, in input order.
    RETURN QUERY
    SELECT r.id, r.status, r.attempt, r.max_attempts, r.run_at,
           CASE WHEN r.run_at IS NOT NULL THEN greatest(0, extract(epoch FROM r.run_at - v_now))::float8 END
      FROM unnest(complete.ids) WITH ORDINALITY AS i(id, ord)
      JOIN unnest(a_id, a_status, a_attempt, a_max, a_run) AS r(id, status, attempt, max_attempts, run_at)
        ON r.id = i.id
     ORDER BY i.ord;
END
$$;
COMMENT ON FUNCTION pgq.complete(uuid, bigint[], bigint[], text[], jsonb, timestamptz) IS
    'Ends attempts owned under these leases with what the worker observed (successful, failed, interrupted, canceled, snoozed, fatal); answers per job what SQL decided: status successful, failed (dead), canceled, retry or snoozed, attempt, max_attempts, and for a retry or snooze run_at and retry_in_s. Stale leases are ignored.';
