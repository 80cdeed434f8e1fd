-- pgq.compact_jobs: rewrites a bloated pgq.jobs to its compact size, keeping every row as it was.
-- No BEGIN/ROLLBACK here: dead row versions only become removable once the transactions that made
-- them have committed, so the setup commits (the file runs on its own fresh database).
SELECT plan(60);

\set wa '''aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa'''
\set wb '''bbbbbbbb-bbbb-bbbb-bbbb-bbbbbbbbbbbb'''
\set t0 '''2030-01-01 00:00:00+00'''

-- Structure and rights --------------------------------------------------------------------------
SELECT has_table('pgq', 'compaction', 'table pgq.compaction');
SELECT is((SELECT count(*)::int FROM pgq.compaction), 1, 'pgq.compaction holds one row');
SELECT is((SELECT compactions FROM pgq.compaction), 0::bigint, 'no compaction yet');
SELECT ok((SELECT indisclustered FROM pg_index WHERE indexrelid = 'pgq.jobs_pkey'::regclass),
          'pgq.jobs is marked clustered on jobs_pkey (the first compaction changes no catalog flag)');
SELECT ok(has_function_privilege('pgq_worker', 'pgq.compact_jobs(int, bigint, interval, timestamptz)', 'EXECUTE'),
          'pgq_worker may compact');
SELECT ok(NOT has_function_privilege('pgq_producer', 'pgq.compact_jobs(int, bigint, interval, timestamptz)', 'EXECUTE'),
          'pgq_producer may not');
SELECT ok(NOT has_function_privilege('public', 'pgq.compact_jobs(int, bigint, interval, timestamptz)', 'EXECUTE'),
          'PUBLIC may not');
SELECT ok(NOT has_table_privilege('pgq_worker', 'pgq.compaction', 'SELECT'), 'pgq.compaction is owner only');

-- A small table is never compacted --------------------------------------------------------------
SELECT pgq.enqueue('cj_keep', jsonb_build_object('n', 0), priority => 3) AS first_id \gset
SELECT results_eq($$SELECT compacted, reason, bytes_after FROM pgq.compact_jobs(lock_wait => '10 s')$$,
                  $$VALUES (false, 'not bloated', NULL::bigint)$$, 'one job, under 1 MiB: not bloated');

-- Live jobs that must survive: queued (one delayed, one deduplicated), running with leases ------
SELECT count(*) FROM pgq.enqueue_many(array_fill('cj_keep'::text, ARRAY[30]),
    payloads => (SELECT jsonb_agg(jsonb_build_object('n', g, 'pad', repeat('x', g)) ORDER BY g) FROM generate_series(1, 30) g),
    priorities => ARRAY(SELECT g % 3 FROM generate_series(1, 30) g),
    headers => (SELECT jsonb_agg(jsonb_build_object('h', g) ORDER BY g) FROM generate_series(1, 30) g));
SELECT pgq.enqueue('cj_keep', '{"later": true}', run_at => now() + interval '1 day', dedupe_key => 'cj-later') AS later_id \gset
SELECT pgq.configure('cj_run', max_attempts => 3);
SELECT count(*) FROM pgq.enqueue_many(array_fill('cj_run'::text, ARRAY[6]));
CREATE TEMP TABLE run AS SELECT id, lease, :wa::uuid AS worker, NULL::bigint AS old_lease
                          FROM pgq.claim(:wa, '{cj_run}', 6, now());
-- One job fails once (its error list grows), is re-claimed by worker B and flagged for cancellation.
SELECT min(id) AS moved FROM run \gset
CREATE TEMP TABLE v AS SELECT :wa::uuid AS wa, :wb::uuid AS wb, :t0::timestamptz AS t0, :moved::bigint AS moved;
SELECT count(*) FROM pgq.complete(:wa, ARRAY[:moved]::bigint[], ARRAY(SELECT lease FROM run WHERE id = :moved),
                                  '{failed}', jsonb_build_array('{"error": "boom", "retry_after": 0}'::jsonb));
UPDATE run SET old_lease = lease, worker = :wb,
               lease = (SELECT c.lease FROM pgq.claim(:wb, '{cj_run}', 1, now() + interval '1 second') c)
 WHERE id = :moved;
SELECT is((SELECT count(*)::int FROM pgq.cancel(ARRAY[:moved]::bigint[])), 1, 'setup: the re-claimed job is flagged');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE status = 'running'), 6, 'setup: six running jobs with their leases');

-- Churn: 20,000 jobs through the table, each transaction committed ------------------------------
DO $$
DECLARE
    v_ids bigint[];
    v_leases bigint[];
BEGIN
    FOR i IN 1..40 LOOP
        PERFORM pgq.enqueue_many(array_fill('cj_churn'::text, ARRAY[500]));
        SELECT array_agg(c.id), array_agg(c.lease) INTO v_ids, v_leases
          FROM pgq.claim('cccccccc-cccc-cccc-cccc-cccccccccccc', '{cj_churn}', 500, now()) c;
        PERFORM pgq.complete('cccccccc-cccc-cccc-cccc-cccccccccccc', v_ids, v_leases,
                             array_fill('successful'::text, ARRAY[500]));
        COMMIT;
    END LOOP;
END
$$;
SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE entrypoint = 'cj_churn'), 20000, 'setup: 20,000 jobs went through');
-- A live job at the end of the file, so that a (concurrent auto)vacuum cannot truncate the heap.
SELECT pgq.enqueue('cj_keep', '{"tail": true}');

CREATE TEMP TABLE before_rows AS SELECT j.id, to_jsonb(j) AS r FROM pgq.jobs j;
CREATE TEMP TABLE before_eps AS SELECT to_jsonb(e) AS r FROM pgq.entrypoints e;
CREATE TEMP TABLE sizes AS
SELECT 'before'::text AS stage, pg_relation_size('pgq.jobs') AS heap, pg_indexes_size('pgq.jobs') AS idx,
       pg_total_relation_size('pgq.jobs') AS total, pg_relation_filenode('pgq.jobs') AS node,
       (SELECT max(id) FROM pgq.job_history) AS max_id;
SELECT ok((SELECT total > 2 * 1048576 FROM sizes), 'setup: the table grew past 2 MiB');

-- Record what the triggers would notify from here on (pgq._notify resolves pgq.pg_notify first).
CREATE TABLE public.cj_notes (n serial PRIMARY KEY, payload text);
CREATE FUNCTION pgq.pg_notify(channel text, payload text) RETURNS void LANGUAGE sql AS
    $$ INSERT INTO public.cj_notes (payload) VALUES (payload) $$;
ALTER FUNCTION pgq._notify(text, text, jsonb) SET search_path = pgq, pg_catalog, pg_temp;

-- Bad arguments: PQ008, nothing done ------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM pgq.compact_jobs(max_rows => -1)$$, 'PQ008',
    'max_rows must be a non-negative number of rows, got -1', 'max_rows -1: PQ008 naming the value');
SELECT throws_ok($$SELECT * FROM pgq.compact_jobs(max_rows => NULL)$$, 'PQ008',
    'max_rows must be a non-negative number of rows, got NULL', 'max_rows NULL: PQ008');
SELECT throws_ok($$SELECT * FROM pgq.compact_jobs(max_bytes => -5)$$, 'PQ008',
    'max_bytes must be a non-negative number of bytes, got -5', 'max_bytes -5: PQ008');
SELECT throws_ok($$SELECT * FROM pgq.compact_jobs(max_bytes => NULL)$$, 'PQ008',
    'max_bytes must be a non-negative number of bytes, got NULL', 'max_bytes NULL: PQ008');
SELECT throws_ok($$SELECT * FROM pgq.compact_jobs(lock_wait => interval '-1 second')$$, 'PQ008',
    'lock_wait must be between 0 and 1 minute, got -00:00:01', 'negative lock_wait: PQ008');
SELECT throws_ok($$SELECT * FROM pgq.compact_jobs(lock_wait => NULL)$$, 'PQ008',
    'lock_wait must be between 0 and 1 minute, got NULL', 'lock_wait NULL: PQ008');
SELECT throws_ok($$SELECT * FROM pgq.compact_jobs(lock_wait => interval '61 seconds')$$, 'PQ008',
    'lock_wait must be between 0 and 1 minute, got 00:01:01', 'lock_wait over a minute: PQ008');
SELECT is((SELECT compactions FROM pgq.compaction), 0::bigint, 'bad arguments: no compaction recorded');
SELECT is(pg_relation_filenode('pgq.jobs'), (SELECT node FROM sizes), 'bad arguments: the table was not rewritten');

-- Too many rows, too much data: nothing done ----------------------------------------------------
SELECT results_eq($$SELECT compacted, reason, rows > 3, bytes_after FROM pgq.compact_jobs(max_rows => 3, lock_wait => '10 s')$$,
                  $$VALUES (false, 'too many rows', true, NULL::bigint)$$, 'max_rows 3: too many rows');
SELECT results_eq($$SELECT compacted, reason, rows, bytes_after FROM pgq.compact_jobs(max_bytes => 1000, lock_wait => '10 s')$$,
                  $$VALUES (false, 'too much data', (SELECT count(*) FROM before_rows), NULL::bigint)$$,
                  'max_bytes 1000: too much data (after an exact count)');
SELECT is((SELECT compactions FROM pgq.compaction), 0::bigint, 'refusals record no compaction');
SELECT is(pg_relation_filenode('pgq.jobs'), (SELECT node FROM sizes), 'refusals do not rewrite the table');

-- Compaction -------------------------------------------------------------------------------------
CREATE TEMP TABLE res AS SELECT * FROM pgq.compact_jobs(lock_wait => '10 s', at => :t0);
INSERT INTO sizes
SELECT 'after', pg_relation_size('pgq.jobs'), pg_indexes_size('pgq.jobs'), pg_total_relation_size('pgq.jobs'),
       pg_relation_filenode('pgq.jobs'), NULL;
SELECT results_eq('SELECT compacted, reason, rows FROM res',
                  $$VALUES (true, 'bloated', (SELECT count(*) FROM before_rows))$$, 'compacted: reason bloated, every row counted');
SELECT is((SELECT bytes_before FROM res), (SELECT total FROM sizes WHERE stage = 'before'), 'bytes_before: the size before');
SELECT is((SELECT bytes_after FROM res), (SELECT total FROM sizes WHERE stage = 'after'), 'bytes_after: the size now');
SELECT ok((SELECT a.heap * 4 < b.heap FROM sizes a, sizes b WHERE a.stage = 'after' AND b.stage = 'before'),
          'the heap shrank to under a quarter');
SELECT ok((SELECT a.idx * 4 < b.idx FROM sizes a, sizes b WHERE a.stage = 'after' AND b.stage = 'before'),
          'the indexes shrank to under a quarter');
SELECT ok((SELECT total < 1048576 FROM sizes WHERE stage = 'after'), 'all of it is now under 1 MiB');
SELECT ok((SELECT a.node <> b.node FROM sizes a, sizes b WHERE a.stage = 'after' AND b.stage = 'before'),
          'new files (the table was rewritten)');
SELECT set_eq('SELECT id, r FROM before_rows', 'SELECT j.id, to_jsonb(j) FROM pgq.jobs j',
              'every row is identical, every column (status, lease, worker, heartbeat, attempt, errors, ...)');
SELECT set_eq('SELECT r FROM before_eps', 'SELECT to_jsonb(e) FROM pgq.entrypoints e', 'pgq.entrypoints unchanged');
SELECT is((SELECT count(*)::int FROM cj_notes), 0, 'compaction notified nothing');
SELECT results_eq($$SELECT compacted_at, rows, bytes_before, bytes_after, compactions FROM pgq.compaction$$,
                  $$SELECT (SELECT t0 FROM v), rows, bytes_before, bytes_after, 1::bigint FROM res$$,
                  'pgq.compaction records it at "at"');
SELECT is((SELECT bytes_per_row FROM pgq.compaction), NULL::bigint,
          'fewer than 1,000 rows: no bytes-per-row figure learned');

-- The jobs work as before -----------------------------------------------------------------------
SELECT results_eq($$SELECT state, count(*)::int
                     FROM pgq.heartbeat((SELECT wa FROM v), ARRAY(SELECT id FROM run WHERE worker = (SELECT wa FROM v) ORDER BY id),
                                        ARRAY(SELECT lease FROM run WHERE worker = (SELECT wa FROM v) ORDER BY id))
                    GROUP BY state$$,
                  $$VALUES ('ok', 5)$$, 'heartbeats with the leases from before: worker A still owns its five jobs');
SELECT results_eq($$SELECT state FROM pgq.heartbeat((SELECT wb FROM v), ARRAY[(SELECT moved FROM v)], ARRAY(SELECT lease FROM run WHERE id = (SELECT moved FROM v)))$$,
                  $$VALUES ('cancel_requested')$$, 'worker B still owns the re-claimed job, its cancel flag kept');
SELECT results_eq($$SELECT state FROM pgq.heartbeat((SELECT wa FROM v), ARRAY[(SELECT moved FROM v)], ARRAY(SELECT old_lease FROM run WHERE id = (SELECT moved FROM v)))$$,
                  $$VALUES ('lost')$$, 'the zombie lease of worker A is still fenced off');
SELECT is((SELECT count(*)::int FROM pgq.complete(:wa, ARRAY(SELECT id FROM run WHERE worker = :wa ORDER BY id),
                                                  ARRAY(SELECT lease FROM run WHERE worker = :wa ORDER BY id),
                                                  array_fill('successful'::text, ARRAY[5]))), 5,
          'complete with the leases from before: worker A''s five are accepted');
SELECT is((SELECT count(*)::int FROM pgq.complete(:wb, ARRAY[:moved]::bigint[], ARRAY(SELECT lease FROM run WHERE id = :moved),
                                                  '{canceled}')), 1, 'and worker B completes its job');
SELECT is((SELECT count(*)::int FROM pgq.job_history WHERE entrypoint = 'cj_run'), 6, 'all six run jobs are in history');
SELECT is((SELECT jsonb_array_length(errors) FROM pgq.job_history h WHERE h.id = :moved), 1,
          'the retried job kept its error list');
SELECT results_eq($$SELECT id FROM pgq.claim((SELECT wa FROM v), '{cj_keep}', 3, now())$$,
                  $$SELECT id FROM before_rows WHERE r ->> 'entrypoint' = 'cj_keep' AND (r ->> 'run_at')::timestamptz <= now()
                     ORDER BY (r ->> 'priority')::int DESC, (r ->> 'run_at')::timestamptz, id LIMIT 3$$,
                  'queued jobs are claimed in the same order as before');
SELECT throws_ok(format($$SELECT pgq.enqueue('cj_keep', dedupe_key => 'cj-later')$$), 'PQ007', NULL,
                 'the dedupe key of a compacted job is still held');
SELECT ok(pgq.enqueue('cj_keep') > (SELECT max_id FROM sizes WHERE stage = 'before'),
          'the id sequence went on: a new job gets a higher id than any before');
SELECT is((SELECT count(*)::int FROM cj_notes), 1, 'control: that enqueue was notified (the recorder works)');

-- Not bloated any more: nothing done ------------------------------------------------------------
SELECT results_eq($$SELECT compacted, reason FROM pgq.compact_jobs(lock_wait => '10 s', at => (SELECT t0 FROM v) + interval '10 minutes')$$,
                  $$VALUES (false, 'not bloated')$$, 'right after a compaction: not bloated');
SELECT is((SELECT compactions FROM pgq.compaction), 1::bigint, 'no second compaction recorded');
SELECT is(pg_relation_filenode('pgq.jobs'), (SELECT node FROM sizes WHERE stage = 'after'), 'and no rewrite');

-- Bloat again: a compaction that left the table large holds the next one back for 5 minutes -----
DO $$
DECLARE
    v_ids bigint[];
    v_leases bigint[];
BEGIN
    FOR i IN 1..20 LOOP
        PERFORM pgq.enqueue_many(array_fill('cj_churn'::text, ARRAY[500]));
        SELECT array_agg(c.id), array_agg(c.lease) INTO v_ids, v_leases
          FROM pgq.claim('cccccccc-cccc-cccc-cccc-cccccccccccc', '{cj_churn}', 500, now()) c;
        PERFORM pgq.complete('cccccccc-cccc-cccc-cccc-cccccccccccc', v_ids, v_leases,
                             array_fill('successful'::text, ARRAY[500]));
        COMMIT;
    END LOOP;
END
$$;
SELECT ok(pg_total_relation_size('pgq.jobs') > 1048576, 'setup: bloated again, over 1 MiB');
UPDATE pgq.compaction SET bytes_after = pg_total_relation_size('pgq.jobs');
SELECT results_eq($$SELECT compacted, reason FROM pgq.compact_jobs(lock_wait => '10 s', at => (SELECT t0 FROM v) + interval '4 minutes')$$,
                  $$VALUES (false, 'not bloated')$$,
                  'the last compaction (4 minutes ago) left this size: not bloated until it doubles');
SELECT results_eq($$SELECT compacted, reason FROM pgq.compact_jobs(lock_wait => '10 s', at => (SELECT t0 FROM v) + interval '6 minutes')$$,
                  $$VALUES (true, 'bloated')$$, '6 minutes later the hold is over: compacted');
SELECT is((SELECT compactions FROM pgq.compaction), 2::bigint, 'the second compaction is recorded');
SELECT ok(pg_total_relation_size('pgq.jobs') < 1048576, 'and the table is small again');

-- Bytes per row: learned from a compaction of at least 1,000 rows, then used ----------------------
SELECT count(*) FROM pgq.enqueue_many(array_fill('cj_many'::text, ARRAY[1200]));
DO $$
BEGIN
    FOR i IN 1..20 LOOP
        PERFORM pgq.cancel(ARRAY(SELECT pgq.enqueue_many(array_fill('cj_churn'::text, ARRAY[500]))));
        COMMIT;
    END LOOP;
END
$$;
SELECT pgq.enqueue('cj_keep', '{"tail": 2}');
UPDATE pgq.compaction SET bytes_per_row = 100000;
SELECT results_eq($$SELECT compacted, reason FROM pgq.compact_jobs(lock_wait => '10 s', at => (SELECT t0 FROM v) + interval '1 hour')$$,
                  $$VALUES (false, 'not bloated')$$, 'with 100,000 bytes per row expected, the table is not bloated');
UPDATE pgq.compaction SET bytes_per_row = NULL;
SELECT results_eq($$SELECT compacted, reason FROM pgq.compact_jobs(lock_wait => '10 s', at => (SELECT t0 FROM v) + interval '1 hour')$$,
                  $$VALUES (true, 'bloated')$$, 'with the default 512 it is: compacted');
SELECT results_eq('SELECT bytes_per_row FROM pgq.compaction', 'SELECT bytes_after / rows FROM pgq.compaction',
                  'more than 1,000 rows: bytes per row learned (size after / rows)');

SELECT * FROM finish();
