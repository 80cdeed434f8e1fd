-- pgq.maintain: sweep, promotion, carry forward, rotation and truncation of the ring; the
-- pgq.compact_jobs wrapper. Rows are written straight into pgq.jobs (as the public functions
-- leave them) so that each slot holds exactly what a case needs. No BEGIN/ROLLBACK around the
-- file: the ring's sequences are not transactional anyway, and some cases need their own
-- transactions (the file runs on its own fresh database). What needs a second session (another
-- maintainer, a reader holding a partition's lock) is in tests/py/test_ring.py.
SELECT plan(60);

\set wa '''aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa'''

-- A job written into a slot: queued (with a ready number), running (with a lease) or scheduled.
CREATE FUNCTION public.mt_job(slot int, status text DEFAULT 'queued', ep text DEFAULT 'mt')
RETURNS bigint LANGUAGE sql AS $$
    INSERT INTO pgq.jobs (entrypoint, status, slot, ready_seq, lease, worker_id, heartbeat_at,
                          started_at, attempt, run_at, payload, errors)
    VALUES (ep, status, slot,
            CASE WHEN status = 'queued' THEN nextval('pgq.ready_seq') END,
            CASE WHEN status = 'running' THEN 1000 + slot END,
            CASE WHEN status = 'running' THEN 'aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa'::uuid END,
            CASE WHEN status = 'running' THEN now() END,
            CASE WHEN status = 'running' THEN now() END,
            CASE WHEN status = 'running' THEN 1 ELSE 0 END,
            CASE WHEN status = 'scheduled' THEN now() + interval '1 hour' ELSE now() END,
            jsonb_build_object('slot', slot), '[{"attempt": 0, "error": "before"}]')
    RETURNING id
$$;
-- Pages of dead rows in a slot: rows written and deleted again.
CREATE FUNCTION public.mt_dirty(slot int, n int DEFAULT 50) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_ids bigint[] := ARRAY(SELECT public.mt_job(slot) FROM generate_series(1, n));
BEGIN
    DELETE FROM pgq.jobs j WHERE j.id = ANY (v_ids);
END
$$;
-- The rotation waits 2 s on the server's clock: let it (0) or hold it back (now).
CREATE FUNCTION public.mt_may_rotate(yes boolean) RETURNS void LANGUAGE sql AS $$
    SELECT setval('pgq.ring_rotated_at',
                  CASE WHEN yes THEN 0 ELSE (extract(epoch FROM clock_timestamp()) * 1000)::bigint END)
$$;
CREATE FUNCTION public.mt_cur() RETURNS int LANGUAGE sql AS $$ SELECT pgq._slot()::int $$;
CREATE FUNCTION public.mt_size(slot int) RETURNS bigint LANGUAGE sql AS
    $$ SELECT pg_relation_size(format('pgq.jobs_%s', slot)::regclass) $$;
CREATE FUNCTION public.mt_row(id bigint) RETURNS jsonb LANGUAGE sql AS
    $$ SELECT to_jsonb(j) - 'slot' FROM pgq.jobs j WHERE j.id = mt_row.id $$;

-- Structure and rights --------------------------------------------------------------------------
SELECT has_function('pgq', 'maintain', ARRAY['timestamp with time zone', 'interval'], 'pgq.maintain(at, min_interval)');
SELECT ok(has_function_privilege('pgq_worker', 'pgq.maintain(timestamptz, interval)', 'EXECUTE'), 'pgq_worker may maintain');
SELECT ok(has_function_privilege('pgq_admin', 'pgq.maintain(timestamptz, interval)', 'EXECUTE'), 'pgq_admin may maintain');
SELECT ok(NOT has_function_privilege('pgq_producer', 'pgq.maintain(timestamptz, interval)', 'EXECUTE'), 'pgq_producer may not');
SELECT ok(NOT has_function_privilege('public', 'pgq.maintain(timestamptz, interval)', 'EXECUTE'), 'PUBLIC may not');
SELECT ok(has_function_privilege('pgq_worker', 'pgq.compact_jobs(int, bigint, interval, timestamptz)', 'EXECUTE'),
          'pgq_worker may still call the 0.1.0 name');
SELECT ok(NOT has_table_privilege('pgq_worker', 'pgq.maintenance', 'SELECT')
          AND NOT has_table_privilege('pgq_admin', 'pgq.maintenance', 'UPDATE'),
          'the maintainer''s lock row is the owner''s alone');
SELECT ok((SELECT p.proconfig @> ARRAY['plan_cache_mode=force_generic_plan', 'jit=off', 'enable_seqscan=off']
             FROM pg_proc p WHERE p.oid = 'pgq.maintain(timestamptz, interval)'::regprocedure),
          'generic plans, no JIT, no sequential scans through pgq.jobs');
SELECT hasnt_table('pgq', 'compaction', 'the CLUSTER compaction''s table is gone');

-- The first call on an empty ring rotates (nothing in the next slot, no rotation yet) -----------
SELECT is(mt_cur(), 0, 'a new install starts at slot 0');
SELECT results_eq($$SELECT state, swept, promoted, carried, truncated, rotated, lock_wait_ms FROM pgq.maintain()$$,
                  $$VALUES ('ok'::text, 0, 0, 0, NULL::text, true, NULL::float8)$$,
                  'empty ring: ok, nothing to do but rotate');
SELECT is(mt_cur(), 1, 'slot 1 is current');
SELECT ok((SELECT s.last_value FROM pgq.maintained_at s) BETWEEN (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 60000
                                                              AND (extract(epoch FROM clock_timestamp()) * 1000)::bigint,
          'pgq.maintained_at is now, in epoch milliseconds');
SELECT results_eq($$SELECT state, rotated FROM pgq.maintain()$$, $$VALUES ('ok'::text, false)$$,
                  'at once again: not rotated (the last rotation is not 2 s old)');
SELECT mt_may_rotate(true);
SELECT results_eq($$SELECT rotated FROM pgq.maintain()$$, $$VALUES (true)$$, '2 s later (the clock set back): rotated');
SELECT is(mt_cur(), 2, 'slot 2 is current');

-- Sweep and promotion -------------------------------------------------------------------------------
SELECT mt_may_rotate(false);
SELECT mt_job(2, 'running') AS stale \gset
UPDATE pgq.jobs SET heartbeat_at = now() - interval '1 hour' WHERE id = :stale;
SELECT mt_job(4, 'scheduled') AS later \gset
SELECT results_eq($$SELECT state, swept, promoted FROM pgq.maintain(now() + interval '2 hours')$$,
                  $$VALUES ('ok'::text, 1, 1)$$, 'one stale job swept, one due job promoted (at two hours on)');
SELECT results_eq('SELECT status, lease, worker_id FROM pgq.jobs WHERE id = ' || :stale,
                  $$VALUES ('queued'::text, NULL::bigint, NULL::uuid)$$, 'the stale job is queued again');
SELECT results_eq('SELECT status, slot::int, ready_seq IS NOT NULL FROM pgq.jobs WHERE id = ' || :later,
                  $$VALUES ('queued'::text, 2, true)$$, 'the scheduled job is queued in the current slot, with a ready number');
DELETE FROM pgq.jobs WHERE id IN (:stale, :later);
SELECT throws_ok($$SELECT * FROM pgq.maintain('infinity')$$, 'PQ009', NULL, 'at infinity: PQ009');

-- Carry forward: stragglers of the next slot move to the current one as they are ----------------
-- Slot 3 is next: dead pages, a queued job and a running one (with its lease) still live.
SELECT mt_dirty(3);
SELECT mt_job(3) AS q3 \gset
SELECT mt_job(3, 'running') AS r3 \gset
CREATE TABLE public.mt_before AS SELECT id, mt_row(id) AS r FROM pgq.jobs WHERE id IN (:q3, :r3);
SELECT ok(mt_size(3) > 0, 'setup: slot 3 has pages');
CREATE TABLE public.mt_res AS SELECT * FROM pgq.maintain();
SELECT results_eq($$SELECT state, carried, rotated, truncated FROM mt_res$$,
                  $$VALUES ('ok'::text, 2, false, 'jobs_3'::text)$$,
                  'two stragglers carried, no rotation (slot 3 still had pages), slot 3 truncated');
SELECT results_eq(format('SELECT id, slot::int FROM pgq.jobs WHERE id IN (%s, %s) ORDER BY id', :q3, :r3),
                  format('VALUES (%s::bigint, 2), (%s::bigint, 2)', :q3, :r3), 'both now live in the current slot 2, same ids');
SELECT set_eq(format('SELECT id, mt_row(id) FROM pgq.jobs WHERE id IN (%s, %s)', :q3, :r3), 'SELECT id, r FROM mt_before',
              'every column as it was: status, lease, worker, heartbeat, ready number, attempt, payload, errors');
SELECT is(mt_size(3), 0::bigint, 'slot 3 gave its pages back');
SELECT ok((SELECT lock_wait_ms >= 0 AND lock_wait_ms < 1000 FROM mt_res), 'lock_wait_ms is measured');
SELECT ok((SELECT bytes >= (SELECT sum(pg_total_relation_size(format('pgq.jobs_%s', k)::regclass)) FROM generate_series(0, 3) k)
             FROM mt_res), 'bytes: the ring''s size before the truncation');
SELECT mt_may_rotate(true);
SELECT results_eq($$SELECT carried, rotated FROM pgq.maintain()$$, $$VALUES (0, true)$$,
                  'the next call rotates onto the truncated slot');
SELECT is(mt_cur(), 3, 'slot 3 is current');
SELECT results_eq('SELECT status, lease FROM pgq.jobs WHERE id = ' || :r3, $$VALUES ('running'::text, 1003::bigint)$$,
                  'the carried running job keeps its lease');

-- Truncation: a drained slot gives its pages back; a slot with a live row never goes ------------
-- Slot 0 is next (never used), slot 1 drained with pages, slot 2 holds the carried jobs.
SELECT mt_dirty(1);
SELECT mt_may_rotate(false);
SELECT ok(mt_size(1) > 0, 'setup: slot 1 has pages of dead rows');
SELECT results_eq($$SELECT truncated, rotated FROM pgq.maintain()$$, $$VALUES ('jobs_1'::text, false)$$,
                  'the next slot has nothing to give back: the oldest drained one (slot 1) is truncated');
SELECT is(mt_size(1), 0::bigint, 'slot 1 has no pages now');
SELECT mt_may_rotate(false);
SELECT results_eq($$SELECT truncated FROM pgq.maintain()$$, $$VALUES (NULL::text)$$,
                  'slot 2 holds live jobs: never truncated');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE id IN (:q3, :r3)), 2, 'the live jobs are still there');
-- Only one truncation per call.
SELECT mt_dirty(0);
SELECT mt_dirty(1);
SELECT mt_may_rotate(false);
SELECT results_eq($$SELECT truncated FROM pgq.maintain()$$, $$VALUES ('jobs_0'::text)$$, 'the next slot first');
SELECT ok(mt_size(1) > 0, 'and one slot per call: slot 1 waits');
SELECT mt_may_rotate(false);
SELECT results_eq($$SELECT truncated FROM pgq.maintain()$$, $$VALUES ('jobs_1'::text)$$, 'slot 1 in the next call');

-- Inside a transaction that already wrote through pgq.jobs (pgq.claim calls it) -----------------
SELECT mt_dirty(1);
SELECT mt_may_rotate(false);
BEGIN;
UPDATE pgq.jobs SET priority = priority WHERE id IN (:q3, :r3);
SELECT results_eq($$SELECT state, truncated FROM pgq.maintain()$$, $$VALUES ('ok'::text, 'jobs_1'::text)$$,
                  'a transaction holding its own locks on every partition truncates all the same');
COMMIT;
-- A slot this session still reads from (an open cursor) is left alone: busy, no error.
SELECT mt_dirty(1);
SELECT mt_may_rotate(false);
BEGIN;
DECLARE mt_c CURSOR FOR SELECT * FROM pgq.jobs_1;
FETCH 1 FROM mt_c;
SELECT results_eq($$SELECT state, truncated FROM pgq.maintain()$$, $$VALUES ('busy'::text, NULL::text)$$,
                  'a slot in use by this session: busy, not an error');
COMMIT;
SELECT ok(mt_size(1) > 0, 'and it kept its pages');

-- A backlog in the next slot stops the ring ----------------------------------------------------------
SELECT mt_may_rotate(false);
SELECT pgq.maintain();  -- slot 1 truncated
SELECT mt_may_rotate(true);
SELECT results_eq($$SELECT rotated FROM pgq.maintain()$$, $$VALUES (true)$$, 'setup: rotated');
SELECT is(mt_cur(), 0, 'setup: slot 0 is current, slot 1 next');
SELECT count(*) FROM (SELECT mt_job(1) FROM generate_series(1, 1001)) s;
SELECT mt_may_rotate(true);
SELECT results_eq($$SELECT carried, rotated, truncated FROM pgq.maintain()$$, $$VALUES (0, false, NULL::text)$$,
                  '1,001 live jobs in the next slot: a backlog, not carried; the ring waits');
SELECT is(mt_cur(), 0, 'slot 0 stays current');
DELETE FROM pgq.jobs WHERE slot = 1 AND id NOT IN (SELECT id FROM pgq.jobs WHERE slot = 1 ORDER BY id LIMIT 1000);
SELECT results_eq($$SELECT carried, truncated FROM pgq.maintain()$$, $$VALUES (1000, 'jobs_1'::text)$$,
                  '1,000: carried, and the slot truncated');

-- min_interval: a call soon after the last pass answers 'recent' and does nothing -------------
SELECT mt_may_rotate(false);
SELECT setval('pgq.maintained_at', (extract(epoch FROM clock_timestamp()) * 1000)::bigint - 10000) AS before_ms \gset
SELECT results_eq($$SELECT * FROM pgq.maintain(min_interval => interval '1 minute')$$,
                  $$VALUES ('recent'::text, 0, 0, 0, NULL::text, false, NULL::float8, NULL::bigint)$$,
                  'the last pass 10 s ago, min_interval 1 minute: recent, counts 0');
SELECT is((SELECT s.last_value FROM pgq.maintained_at s), :before_ms::bigint,
          'recent: no pass (pgq.maintained_at unchanged)');
SELECT results_eq($$SELECT state, bytes IS NOT NULL FROM pgq.maintain(min_interval => interval '5 seconds')$$,
                  $$VALUES ('ok'::text, true)$$, 'the last pass 10 s ago, min_interval 5 s: a pass');
SELECT ok((SELECT s.last_value FROM pgq.maintained_at s) > :before_ms, 'pgq.maintained_at moved');
SELECT results_eq($$SELECT state FROM pgq.maintain(min_interval => interval '0')$$,
                  $$VALUES ('ok'::text)$$, 'min_interval 0: always a pass');
SELECT results_eq($$SELECT state FROM pgq.maintain(min_interval => NULL)$$,
                  $$VALUES ('ok'::text)$$, 'min_interval NULL (the default): always a pass');
SELECT setval('pgq.maintained_at', (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000);
SELECT results_eq($$SELECT state FROM pgq.maintain(min_interval => interval '1 minute')$$,
                  $$VALUES ('ok'::text)$$,
                  'the last pass stamped an hour ahead (the clock was set back): not recent, a pass');
-- The clock set back does not hold up the rotation either (the ring's place restored after).
SELECT last_value AS seq_before FROM pgq.ring_seq \gset
SELECT is(mt_size((mt_cur() + 1) % 4), 0::bigint, 'the next slot has no pages');
SELECT setval('pgq.ring_rotated_at', (extract(epoch FROM clock_timestamp()) * 1000)::bigint + 3600000);
SELECT is((SELECT rotated FROM pgq.maintain()), true,
          'the last rotation stamped an hour ahead: the ring turns');
SELECT setval('pgq.ring_seq', :seq_before);
SELECT mt_may_rotate(false);
SELECT throws_ok($$SELECT * FROM pgq.maintain(min_interval => interval '-1 second')$$, 'PQ009',
    'min_interval must be between 0 and 1 hour, got -00:00:01', 'a negative min_interval: PQ009 naming it');
SELECT throws_ok($$SELECT * FROM pgq.maintain(min_interval => interval '2 hours')$$, 'PQ009',
    'min_interval must be between 0 and 1 hour, got 02:00:00', 'over an hour: PQ009 naming it');

-- The 0.1.0 name ---------------------------------------------------------------------------------
SELECT mt_dirty(1);
SELECT mt_job(1) AS q1 \gset
SELECT results_eq($$SELECT compacted, reason, rows, bytes_after < bytes_before FROM pgq.compact_jobs()$$,
                  $$VALUES (true, 'ok'::text, 1::bigint, true)$$,
                  'compact_jobs: compacted = a slot truncated, reason = state, rows = carried, the size before and after');
SELECT results_eq($$SELECT compacted, reason, rows FROM pgq.compact_jobs()$$,
                  $$VALUES (false, 'ok'::text, 0::bigint)$$, 'nothing to truncate: not compacted');
SELECT throws_ok($$SELECT * FROM pgq.compact_jobs(max_rows => -1)$$, 'PQ008',
    'max_rows must be a non-negative number of rows, got -1', 'its arguments are still checked: PQ008');

SELECT * FROM finish();
