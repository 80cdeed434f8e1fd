-- Structure: schema, tables, constraints, indexes, storage, triggers, types, functions, privileges.
BEGIN;
SELECT plan(92);

-- Schema and tables ---------------------------------------------------------------------------
SELECT has_schema('pgq');
SELECT ok(obj_description('pgq'::regnamespace, 'pg_namespace') LIKE 'pgq-thin%',
          'schema pgq carries the pgq-thin comment (the install guard relies on it)');
SELECT has_table('pgq', 'jobs', 'table pgq.jobs');
SELECT has_table('pgq', 'job_history', 'table pgq.job_history');
SELECT has_table('pgq', 'entrypoints', 'table pgq.entrypoints');
SELECT has_view('pgq', 'queue_stats', 'view pgq.queue_stats');
SELECT has_view('pgq', 'failed_jobs', 'view pgq.failed_jobs');
SELECT has_sequence('pgq', 'job_id_seq', 'sequence pgq.job_id_seq');
SELECT has_sequence('pgq', 'lease_seq', 'sequence pgq.lease_seq');
SELECT columns_are('pgq', 'jobs', ARRAY['id', 'entrypoint', 'status', 'priority', 'run_at', 'enqueued_at', 'attempt',
                                       'payload', 'headers', 'dedupe_key', 'lease', 'worker_id', 'started_at',
                                       'heartbeat_at', 'cancel_requested', 'errors', 'claim_request', 'ready_seq',
                                       'slot', 'timeout', 'deadline_at', 'group_key'], 'pgq.jobs columns');
SELECT has_table('pgq', 'lanes', 'table pgq.lanes (claim lanes and their cursors)');
SELECT has_table('pgq', 'live_keys', 'table pgq.live_keys (dedupe keys of live jobs)');
SELECT has_sequence('pgq', 'ready_seq', 'sequence pgq.ready_seq (ready numbers)');
SELECT has_sequence('pgq', 'ring_seq', 'sequence pgq.ring_seq (the ring''s current slot)');
SELECT is((SELECT relkind::text FROM pg_class WHERE oid = 'pgq.jobs'::regclass), 'p', 'pgq.jobs is partitioned');
SELECT results_eq($$SELECT c.relname::text COLLATE "default", pg_get_expr(c.relpartbound, c.oid) COLLATE "default"
                      FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
                     WHERE i.inhparent = 'pgq.jobs'::regclass ORDER BY 1$$,
                  $$VALUES ('jobs_0', 'FOR VALUES IN (''0'')'), ('jobs_1', 'FOR VALUES IN (''1'')'),
                           ('jobs_2', 'FOR VALUES IN (''2'')'), ('jobs_3', 'FOR VALUES IN (''3'')'),
                           ('jobs_scheduled', 'FOR VALUES IN (''4'')')$$,
                  'pgq.jobs: four ring slots and the partition of jobs not due yet');
SELECT columns_are('pgq', 'job_history', ARRAY['id', 'entrypoint', 'status', 'priority', 'attempt', 'payload', 'headers',
                                              'dedupe_key', 'enqueued_at', 'started_at', 'finished_at', 'worker_id',
                                              'lease', 'details', 'errors', 'finished_xid', 'timeout', 'group_key'], 'pgq.job_history columns');
SELECT columns_are('pgq', 'entrypoints', ARRAY['entrypoint', 'concurrency_limit', 'max_attempts', 'backoff_base',
                                              'backoff_max', 'heartbeat_timeout', 'updated_at', 'paused_at', 'paused_by',
                                              'run_timeout', 'max_interruptions', 'max_snoozes',
                                              'dedupe_period', 'dedupe_states', 'key_concurrency_limit', 'rate_limit', 'rate_period',
                                              'rate_per_key'],
                   'pgq.entrypoints columns');
SELECT col_type_is('pgq', 'jobs', 'id', 'bigint', 'jobs.id is bigint');
SELECT col_type_is('pgq', 'jobs', 'lease', 'bigint', 'jobs.lease is bigint');
SELECT col_type_is('pgq', 'jobs', 'worker_id', 'uuid', 'jobs.worker_id is uuid');
SELECT col_type_is('pgq', 'jobs', 'payload', 'jsonb', 'jobs.payload is jsonb');
SELECT col_type_is('pgq', 'jobs', 'run_at', 'timestamp with time zone', 'jobs.run_at is timestamptz');
SELECT col_default_is('pgq', 'jobs', 'status', 'queued', 'jobs.status defaults to queued');
SELECT col_default_is('pgq', 'jobs', 'errors', '[]', 'jobs.errors defaults to []');
SELECT col_is_pk('pgq', 'live_keys', 'dedupe_key', 'live_keys primary key: a dedupe key has one live holder');
SELECT col_is_pk('pgq', 'job_history', 'id', 'job_history primary key');
SELECT col_is_pk('pgq', 'entrypoints', 'entrypoint', 'entrypoints primary key');

-- Named CHECK constraints ----------------------------------------------------------------------
SELECT set_has($$SELECT conname::text FROM pg_constraint WHERE connamespace = 'pgq'::regnamespace AND contype = 'c'$$,
               $$VALUES ('jobs_status_check'), ('jobs_running_has_lease_check'), ('jobs_attempt_check'), ('lanes_priority_check'),
                        ('entrypoints_entrypoint_check'), ('jobs_slot_check'), ('jobs_ready_check'), ('job_history_status_check'), ('entrypoints_concurrency_limit_check'),
                        ('entrypoints_max_attempts_check'), ('entrypoints_backoff_check'), ('entrypoints_heartbeat_timeout_check')$$,
               'the named CHECK constraints exist');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, status) VALUES ('s_chk', 'done')$$, '23514',
    'new row for relation "jobs_0" violates check constraint "jobs_status_check"', 'jobs_status_check rejects an unknown status');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, status) VALUES ('s_chk', 'running')$$, '23514',
    'new row for relation "jobs_0" violates check constraint "jobs_running_has_lease_check"',
    'a running job without lease, worker and heartbeat is rejected');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, lease, worker_id, heartbeat_at, ready_seq)
                   VALUES ('s_chk', 1, gen_random_uuid(), now(), 1)$$, '23514',
    'new row for relation "jobs_0" violates check constraint "jobs_running_has_lease_check"',
    'a queued job with a lease is rejected');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, lease, ready_seq) VALUES ('s_chk', 1, 1)$$, '23514',
    'new row for relation "jobs_0" violates check constraint "jobs_running_has_lease_check"',
    'a queued job with a lease alone is rejected (jobs_key_running_idx selects running jobs by their lease)');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint) VALUES ('s_chk')$$, '23514',
    'new row for relation "jobs_0" violates check constraint "jobs_ready_check"', 'a queued job needs a ready number');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, status) VALUES ('s_chk', 'scheduled')$$, '23514',
    'new row for relation "jobs_0" violates check constraint "jobs_slot_check"', 'a scheduled job lives in slot 4 only');
-- A job's priority and entrypoint name are checked at its lane and entrypoint row, which the
-- insert trigger creates for a new pair (pgq._jobs_after_insert).
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, priority, ready_seq) VALUES ('s_chk', 40000, 1)$$, '23514',
    'new row for relation "lanes" violates check constraint "lanes_priority_check"', 'a job with a priority outside smallint: lanes_priority_check');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, attempt) VALUES ('s_chk', -1)$$, '23514',
    'new row for relation "jobs_0" violates check constraint "jobs_attempt_check"', 'jobs_attempt_check');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, ready_seq) VALUES ('', 1)$$, '23514',
    'new row for relation "entrypoints" violates check constraint "entrypoints_entrypoint_check"', 'a job with an empty name: entrypoints_entrypoint_check');
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, priority, ready_seq) VALUES ('s_chk', 7, 1), ('{s_chk}', 7, 1)$$, '23514',
    'new row for relation "entrypoints" violates check constraint "entrypoints_entrypoint_check"',
    'a bad name beside a good one: the whole statement is refused');
SELECT is((SELECT count(*) FROM pgq.jobs WHERE entrypoint IN ('s_chk', '{s_chk}', '')), 0::bigint, 'and nothing of it was added');
SELECT throws_ok($$INSERT INTO pgq.job_history (id, entrypoint, status, priority, attempt, enqueued_at, finished_at)
                   VALUES (-1, 's_chk', 'lost', 0, 0, now(), now())$$, '23514',
    'new row for relation "job_history" violates check constraint "job_history_status_check"', 'job_history_status_check');
SELECT throws_ok($$INSERT INTO pgq.entrypoints (entrypoint, backoff_base, backoff_max) VALUES ('s_chk2', '2 s', '1 s')$$, '23514',
    'new row for relation "entrypoints" violates check constraint "entrypoints_backoff_check"', 'entrypoints_backoff_check');
SELECT throws_ok($$INSERT INTO pgq.entrypoints (entrypoint, heartbeat_timeout) VALUES ('s_chk2', '0.5 s')$$, '23514',
    'new row for relation "entrypoints" violates check constraint "entrypoints_heartbeat_timeout_check"',
    'entrypoints_heartbeat_timeout_check');

-- Indexes; heartbeat_at in none; fillfactor ---------------------------------------------------
SELECT is(pg_get_indexdef('pgq.jobs_ready_idx'::regclass),
          'CREATE INDEX jobs_ready_idx ON ONLY pgq.jobs USING btree (entrypoint, priority DESC, ready_seq) WHERE (status = ''queued''::text)',
          'jobs_ready_idx: each lane (entrypoint, priority) in ready order, read from its cursor on');
SELECT is(pg_get_indexdef('pgq.jobs_running_idx'::regclass),
          'CREATE INDEX jobs_running_idx ON ONLY pgq.jobs USING btree (entrypoint, claim_request) WHERE (status = ''running''::text)',
          'jobs_running_idx: running jobs per entrypoint, and the claim request that took them (a re-sent claim finds them)');
SELECT is(pg_get_indexdef('pgq.jobs_id_idx'::regclass),
          'CREATE INDEX jobs_id_idx ON ONLY pgq.jobs USING btree (id)',
          'jobs_id_idx: jobs by id (not unique: a unique index would have to hold the partition key)');
SELECT is(pg_get_indexdef('pgq.jobs_scheduled_idx'::regclass),
          'CREATE INDEX jobs_scheduled_idx ON ONLY pgq.jobs USING btree (entrypoint, run_at, id) WHERE (status = ''scheduled''::text)',
          'jobs_scheduled_idx: jobs not due yet by due time (and id: promotion in due order reads no more than it moves)');
SELECT is(pg_get_indexdef('pgq.jobs_key_idx'::regclass),
          'CREATE INDEX jobs_key_idx ON ONLY pgq.jobs USING btree (hashtext(entrypoint), priority, hashtextextended(group_key, (0)::bigint), ready_seq) WHERE ((status = ''queued''::text) AND (group_key IS NOT NULL))',
          'jobs_key_idx: queued jobs with a group key, per lane (the entrypoint''s hash: fixed-width columns only) and key, in ready order (per-key limits, fair share)');
SELECT is(pg_get_indexdef('pgq.jobs_key_running_idx'::regclass),
          'CREATE INDEX jobs_key_running_idx ON ONLY pgq.jobs USING btree (hashtext(entrypoint), hashtextextended(group_key, (0)::bigint)) WHERE ((lease IS NOT NULL) AND (group_key IS NOT NULL))',
          'jobs_key_running_idx: running jobs (by their lease, so no plan serves its count from jobs_running_idx) with a group key, per entrypoint hash and key');
SELECT is(pg_get_indexdef('pgq.job_history_finished_at_idx'::regclass),
          'CREATE INDEX job_history_finished_at_idx ON pgq.job_history USING btree (finished_at)',
          'job_history_finished_at_idx: pruning');
SELECT is(pg_get_indexdef('pgq.job_history_failed_idx'::regclass),
          'CREATE INDEX job_history_failed_idx ON pgq.job_history USING btree (entrypoint, finished_at) WHERE (status = ''failed''::text)',
          'job_history_failed_idx: dead jobs');
SELECT ok(NOT EXISTS (SELECT 1 FROM pg_index i
                       WHERE i.indrelid = 'pgq.jobs'::regclass
                         AND ((SELECT attnum FROM pg_attribute WHERE attrelid = 'pgq.jobs'::regclass AND attname = 'heartbeat_at')
                                = ANY (i.indkey::int2[])
                              OR pg_get_indexdef(i.indexrelid) LIKE '%heartbeat_at%')),
          'heartbeat_at is in no index of pgq.jobs (key, expression or predicate): heartbeats stay HOT');
SELECT is((SELECT count(*)::int FROM pg_index WHERE indrelid = 'pgq.jobs'::regclass), 6,
          'pgq.jobs has exactly six indexes (every extra one costs on the hot path; jobs_key_idx and jobs_key_running_idx hold only jobs with a group key)');
SELECT ok((SELECT bool_and(reloptions @> ARRAY['fillfactor=50']) FROM pg_class
            WHERE oid IN ('pgq.jobs_0'::regclass, 'pgq.jobs_1'::regclass, 'pgq.jobs_2'::regclass, 'pgq.jobs_3'::regclass)),
          'the ring slots have fillfactor 50 (room on each page for HOT heartbeats)');

-- Triggers: statement level, the right functions ----------------------------------------------
SELECT trigger_is('pgq', 'jobs', 'jobs_after_insert', 'pgq', '_jobs_after_insert', 'insert trigger');
SELECT trigger_is('pgq', 'jobs', 'jobs_after_update', 'pgq', '_jobs_after_update', 'update trigger');
SELECT trigger_is('pgq', 'jobs', 'jobs_after_delete', 'pgq', '_jobs_after_delete', 'delete trigger');
SELECT ok((SELECT bool_and(tgtype & 1 = 0) FROM pg_trigger WHERE tgrelid = 'pgq.jobs'::regclass AND NOT tgisinternal),
          'all triggers on pgq.jobs are statement-level');

-- The claimed_job type ----------------------------------------------------------------------
SELECT has_type('pgq', 'claimed_job', 'type pgq.claimed_job');
SELECT results_eq($$SELECT attname::text COLLATE "default", format_type(atttypid, atttypmod) FROM pg_attribute
                     WHERE attrelid = 'pgq.claimed_job'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum$$,
                  $$VALUES ('id', 'bigint'), ('lease', 'bigint'), ('entrypoint', 'text'), ('payload', 'jsonb'),
                           ('headers', 'jsonb'), ('priority', 'integer'), ('attempt', 'integer'),
                           ('enqueued_at', 'timestamp with time zone'), ('run_at', 'timestamp with time zone'),
                           ('dedupe_key', 'text'), ('max_attempts', 'integer'), ('heartbeat_timeout', 'interval'),
                           ('heartbeat_timeout_s', 'double precision'), ('last_attempt', 'boolean'),
                           ('run_timeout_s', 'double precision'), ('taken_over', 'jsonb')$$,
                  'claimed_job columns: the contract''s, then run_at, dedupe_key, max_attempts, heartbeat_timeout, heartbeat_timeout_s, last_attempt, run_timeout_s, taken_over');

-- Functions: pinned search_path, a comment, SECURITY DEFINER for the public ones ---------------
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace
              AND NOT coalesce(p.proconfig @> ARRAY['search_path=pg_catalog, pgq, pg_temp'], false)
              -- Inlined into its callers (a SET clause would prevent that): private, LANGUAGE sql,
              -- naming only pg_catalog objects (and pgq._slot its sequence, pgq._rate_window
              -- pgq.rate_starts), schema-qualified.
              AND p.oid NOT IN ('pgq._json_ok(jsonb, int)'::regprocedure, 'pgq._valid_name(text)'::regprocedure,
                                'pgq._slot()'::regprocedure,
                                'pgq._retry_delay(int, interval, interval, jsonb)'::regprocedure,
                                'pgq._rate_window(text, bigint, timestamptz)'::regprocedure,
                                'pgq._rate_rows(text, bigint, text, int, timestamptz)'::regprocedure)),
          NULL, 'every pgq function pins search_path = pg_catalog, pgq, pg_temp (but the inlined pgq._json_ok, pgq._valid_name, pgq._slot, pgq._retry_delay, pgq._rate_window and pgq._rate_rows)');
SELECT ok((SELECT bool_and(p.proconfig IS NULL AND NOT p.prosecdef AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'sql'))
             FROM pg_proc p WHERE p.oid IN ('pgq._json_ok(jsonb, int)'::regprocedure, 'pgq._valid_name(text)'::regprocedure,
                                            'pgq._slot()'::regprocedure,
                                            'pgq._retry_delay(int, interval, interval, jsonb)'::regprocedure,
                                            'pgq._rate_window(text, bigint, timestamptz)'::regprocedure,
                                            'pgq._rate_rows(text, bigint, text, int, timestamptz)'::regprocedure)),
          'pgq._json_ok, pgq._valid_name, pgq._slot, pgq._retry_delay, pgq._rate_window and pgq._rate_rows: no SET clause, not SECURITY DEFINER (so they are inlined)');
CREATE FUNCTION pg_temp.verbose_plan(query text) RETURNS text LANGUAGE plpgsql AS $f$
DECLARE
    line text;
    plan text := '';
BEGIN
    FOR line IN EXECUTE 'EXPLAIN (VERBOSE, COSTS OFF) ' || query LOOP
        plan := plan || line || E'\n';
    END LOOP;
    RETURN plan;
END
$f$;
SELECT unalike(pg_temp.verbose_plan($q$SELECT pgq._retry_delay(e.a, e.base, e.max, e.d)
                                         FROM (VALUES (1, interval '1 second', interval '5 minutes', NULL::jsonb)) AS e(a, base, max, d)$q$),
               '%_retry_delay%', 'pgq._retry_delay is inlined (its expression, not a call, is in the plan)');
SELECT unalike(pg_temp.verbose_plan($q$SELECT w.used FROM (VALUES ('a'::text, 7::bigint)) AS e(ep, h)
                                         CROSS JOIN LATERAL pgq._rate_window(e.ep, e.h, now()) AS w$q$),
               '%_rate_window%', 'pgq._rate_window is inlined (its probes of pgq.rate_starts, not a call, are in the plan)');
SELECT unalike(pg_temp.verbose_plan($q$SELECT r.* FROM (VALUES ('a'::text, 7::bigint, 2)) AS e(ep, h, n)
                                         CROSS JOIN LATERAL pgq._rate_rows(e.ep, e.h, NULL, e.n, now()) AS r$q$),
               '%_rate_rows%', 'pgq._rate_rows is inlined (its probe of pgq.rate_starts, not a call, is in the plan)');
SELECT is((SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace
              AND p.proname IN ('claim', 'complete', '_archive', 'heartbeat', 'release', 'enqueue', 'enqueue_many')
              AND NOT p.proconfig @> ARRAY['plan_cache_mode=force_generic_plan', 'jit=off']),
          NULL, 'the hot functions use generic plans and no JIT (a backlog of 1M made JIT compile every claim)');
SELECT is((SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace
              AND p.proname IN ('claim', 'complete', '_archive', 'heartbeat', 'release', 'cancel', 'enqueue',
                                'enqueue_many', '_promote', '_sweep', '_lane_cursor', 'maintain')
              AND NOT p.proconfig @> ARRAY['enable_seqscan=off']),
          NULL, 'the hot functions plan without sequential scans (a plan made while a slot was empty would scan it once per job)');
SELECT ok((SELECT p.proconfig @> ARRAY['enable_bitmapscan=off'] FROM pg_proc p WHERE p.oid = 'pgq.claim(uuid, text[], int, timestamptz, uuid)'::regprocedure),
          'pgq.claim plans without bitmap scans, for itself and the functions it calls (unanalyzed, its UPDATE by ids read every slot through a bitmap)');
SELECT is((SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace
              AND p.proname IN ('complete', '_archive', '_sweep', 'heartbeat', 'release')
              AND NOT p.proconfig @> ARRAY['enable_nestloop=off', 'enable_mergejoin=off']),
          NULL, 'the functions that pair input arrays with jobs join them by hash only (a nested loop probed every partition once per job: ADR 0007)');
-- Look twice (docs/architecture.md#look-twice): a function that writes pgq.jobs waits for row
-- locks unless it locks with SKIP LOCKED; one that waits must look twice for a row carried
-- meanwhile. pgq._archive is called inside its callers' loops; pgq._settle_deps writes only
-- waiting jobs and pgq._enter_ring only rows its caller holds (jobs_scheduled, which the ring's
-- carry never moves).
SELECT is((SELECT array_agg(p.proname::text ORDER BY p.proname) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace
              AND p.prosrc ~ '(UPDATE|DELETE FROM) pgq\.jobs\M'
              AND p.prosrc NOT LIKE '%FOR v_look IN 1..2 LOOP  -- look twice: docs/architecture.md#look-twice%'
              AND p.prosrc NOT LIKE '%FOR v_look IN 0..2 LOOP  -- look twice: docs/architecture.md#look-twice (after a look by slot)%'
              AND (p.prosrc NOT LIKE '%SKIP LOCKED%' OR p.proname = 'claim')
              AND p.proname NOT IN ('_archive', '_settle_deps', '_enter_ring')),
          NULL, 'every function that writes pgq.jobs and waits for row locks looks twice (and a replayed claim)');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace
              AND p.prosrc LIKE '%nextval(''pgq.ready_seq'')%'
              AND p.prosrc NOT LIKE '%pgq._ready_lock(%'),
          NULL, 'every function that draws ready numbers takes the fence first (pgq._ready_lock)');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace AND coalesce(obj_description(p.oid, 'pg_proc'), '') = ''),
          NULL, 'every pgq function has a COMMENT');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace AND p.proname !~ '^_' AND NOT p.prosecdef),
          NULL, 'every public pgq function is SECURITY DEFINER');
SELECT is((SELECT array_agg(c.oid::regclass::text ORDER BY c.oid::regclass::text) FROM pg_class c
            WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('r', 'v')
              AND coalesce(obj_description(c.oid, 'pg_class'), '') = '' AND c.relname IN ('queue_stats', 'failed_jobs')),
          NULL, 'the views have comments');

-- PUBLIC has nothing -------------------------------------------------------------------------
SELECT is((SELECT array_agg(c.oid::regclass::text ORDER BY c.oid::regclass::text) FROM pg_class c
            WHERE c.relnamespace = 'pgq'::regnamespace AND c.relkind IN ('r', 'v', 'S', 'm', 'p')
              AND (c.relacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(c.relacl) a WHERE a.grantee = 0))),
          NULL, 'no table, view or sequence in pgq grants anything to PUBLIC');
SELECT is((SELECT array_agg(p.oid::regprocedure::text ORDER BY p.oid::regprocedure::text) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace
              AND (p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a WHERE a.grantee = 0))),
          NULL, 'no pgq function is executable by PUBLIC');
SELECT ok((SELECT nspacl IS NOT NULL AND NOT EXISTS (SELECT 1 FROM aclexplode(nspacl) a WHERE a.grantee = 0)
             FROM pg_namespace WHERE nspname = 'pgq'), 'PUBLIC has no usage on schema pgq');
SELECT ok((SELECT typacl IS NOT NULL AND NOT EXISTS (SELECT 1 FROM aclexplode(typacl) a WHERE a.grantee = 0)
             FROM pg_type WHERE oid = 'pgq.claimed_job'::regtype), 'PUBLIC has no usage on pgq.claimed_job');

-- Roles --------------------------------------------------------------------------------------
SELECT has_role('pgq_producer');
SELECT has_role('pgq_worker');
SELECT is((SELECT array_agg(f ORDER BY f) FROM unnest(ARRAY[
              'pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text, interval, interval, text)',
              'pgq.enqueue_many(text[], jsonb, int[], timestamptz[], text[], jsonb, text, interval[], interval[], text[], jsonb)',
              'pgq.cancel(bigint[], timestamptz)',
              'pgq.claim(uuid, text[], int, timestamptz, uuid)',
              'pgq.heartbeat(uuid, bigint[], bigint[], timestamptz)',
              'pgq.complete(uuid, bigint[], bigint[], text[], jsonb, timestamptz)',
              'pgq.release(uuid, bigint[], bigint[], timestamptz)',
              'pgq.configure(text, int, int, interval, interval, interval, boolean, interval, int, int, interval, text[], int, int, interval, boolean)',
              'pgq.requeue(bigint[], timestamptz)']) AS f
            WHERE has_function_privilege('pgq_producer', f, 'EXECUTE')),
          ARRAY['pgq.cancel(bigint[], timestamptz)',
                'pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text, interval, interval, text)',
                'pgq.enqueue_many(text[], jsonb, int[], timestamptz[], text[], jsonb, text, interval[], interval[], text[], jsonb)'],
          'pgq_producer executes enqueue, enqueue_many and cancel, nothing else of the API');
SELECT is((SELECT array_agg(f ORDER BY f) FROM unnest(ARRAY[
              'pgq.enqueue(text, jsonb, int, timestamptz, text, jsonb, text, interval, interval, text)',
              'pgq.cancel(bigint[], timestamptz)',
              'pgq.claim(uuid, text[], int, timestamptz, uuid)',
              'pgq.heartbeat(uuid, bigint[], bigint[], timestamptz)',
              'pgq.complete(uuid, bigint[], bigint[], text[], jsonb, timestamptz)',
              'pgq.release(uuid, bigint[], bigint[], timestamptz)',
              'pgq.configure(text, int, int, interval, interval, interval, boolean, interval, int, int, interval, text[], int, int, interval, boolean)',
              'pgq.requeue(bigint[], timestamptz)']) AS f
            WHERE has_function_privilege('pgq_worker', f, 'EXECUTE')),
          ARRAY['pgq.claim(uuid, text[], int, timestamptz, uuid)',
                'pgq.complete(uuid, bigint[], bigint[], text[], jsonb, timestamptz)',
                'pgq.heartbeat(uuid, bigint[], bigint[], timestamptz)',
                'pgq.release(uuid, bigint[], bigint[], timestamptz)'],
          'pgq_worker executes claim, heartbeat, complete and release (not enqueue, cancel, configure, requeue)');
SELECT ok(NOT has_table_privilege('pgq_producer', 'pgq.jobs', 'SELECT') AND NOT has_table_privilege('pgq_worker', 'pgq.jobs', 'SELECT')
          AND NOT has_table_privilege('pgq_producer', 'pgq.job_history', 'SELECT')
          AND NOT has_table_privilege('pgq_producer', 'pgq.jobs', 'INSERT,UPDATE,DELETE')
          AND NOT has_table_privilege('pgq_worker', 'pgq.jobs', 'INSERT,UPDATE,DELETE'),
          'neither role touches the tables directly');
SELECT ok(has_table_privilege('pgq_producer', 'pgq.queue_stats', 'SELECT') AND has_table_privilege('pgq_worker', 'pgq.queue_stats', 'SELECT'),
          'both roles read pgq.queue_stats');

-- The same, by acting as the roles (SET ROLE inside DO, undone on error by the test's subtransaction).
SELECT lives_ok($q$DO $do$ BEGIN
                     SET LOCAL ROLE pgq_producer;
                     PERFORM pgq.enqueue('s_role');
                     PERFORM pgq.enqueue_many(ARRAY['s_role']);
                     PERFORM pgq.cancel(ARRAY[-1]::bigint[]);
                     PERFORM count(*) FROM pgq.queue_stats;
                     RESET ROLE;
                  END $do$ $q$, 'as pgq_producer: enqueue, enqueue_many, cancel and queue_stats work');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_producer;
                     PERFORM * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{s_role}'); END $do$ $q$,
                 '42501', 'permission denied for function claim', 'as pgq_producer: claim is denied');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_producer; PERFORM count(*) FROM pgq.jobs; END $do$ $q$,
                 '42501', 'permission denied for table jobs', 'as pgq_producer: selecting pgq.jobs is denied');
SELECT lives_ok($q$DO $do$ DECLARE c pgq.claimed_job; BEGIN
                     SET LOCAL ROLE pgq_worker;
                     SELECT * INTO STRICT c FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{s_role}');
                     PERFORM pgq.heartbeat('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease]);
                     PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease], '{successful}');
                     SELECT * INTO STRICT c FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{s_role}');
                     PERFORM pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[c.id], ARRAY[c.lease]);
                     RESET ROLE;
                  END $do$ $q$, 'as pgq_worker: claim, heartbeat, complete and release work');
SELECT throws_ok($q$DO $do$ BEGIN SET LOCAL ROLE pgq_worker; PERFORM pgq.configure('s_role', max_attempts => 1); END $do$ $q$,
                 '42501', 'permission denied for function configure', 'as pgq_worker: configure is denied');
SELECT is(current_user::text, 'postgres', 'back to the test''s own role');

-- Drivers: every set-returning function names its columns (none returns SETOF a bare type, whose
-- one column would be named after the function), and no public name is overloaded.
SELECT is((SELECT array_agg(p.proname ORDER BY p.proname)
             FROM pg_proc p JOIN pg_type t ON t.oid = p.prorettype
            WHERE p.pronamespace = 'pgq'::regnamespace AND p.proretset AND t.typtype = 'b'
              AND NOT coalesce(p.proargmodes::text[] && ARRAY['t', 'o'], false)),
          NULL, 'no set-returning function returns an unnamed column');
SELECT is((SELECT array_agg(DISTINCT p.proname) FROM pg_proc p
            WHERE p.pronamespace = 'pgq'::regnamespace
              AND (SELECT count(*) FROM pg_proc o WHERE o.pronamespace = p.pronamespace AND o.proname = p.proname) > 1),
          NULL, 'no overloaded function names');
SELECT * FROM finish();
ROLLBACK;
