-- pgq.enqueue: one job, defaults, validation (PQ001, PQ005, PQ006, PQ009), dedupe keys (PQ007).
BEGIN;
SELECT plan(51);

-- Defaults ------------------------------------------------------------------------------------
SELECT pgq.enqueue('enq_defaults') AS id_def \gset

SELECT is(j.status, 'queued', 'a new job is queued') FROM pgq.jobs j WHERE j.id = :id_def;
SELECT is(j.priority, 0, 'priority defaults to 0') FROM pgq.jobs j WHERE j.id = :id_def;
SELECT is(j.run_at, now(), 'run_at NULL means now') FROM pgq.jobs j WHERE j.id = :id_def;
SELECT is(j.enqueued_at, now(), 'enqueued_at is now') FROM pgq.jobs j WHERE j.id = :id_def;
SELECT is(j.attempt, 0, 'attempt starts at 0') FROM pgq.jobs j WHERE j.id = :id_def;
SELECT ok(j.payload IS NULL AND j.headers IS NULL AND j.dedupe_key IS NULL,
          'payload, headers and dedupe_key default to NULL') FROM pgq.jobs j WHERE j.id = :id_def;
SELECT ok(j.lease IS NULL AND j.worker_id IS NULL AND j.heartbeat_at IS NULL AND j.started_at IS NULL,
          'a queued job has no lease, worker, heartbeat or start') FROM pgq.jobs j WHERE j.id = :id_def;
SELECT is(j.errors, '[]'::jsonb, 'error list starts empty') FROM pgq.jobs j WHERE j.id = :id_def;
SELECT is(j.cancel_requested, false, 'not flagged for cancellation') FROM pgq.jobs j WHERE j.id = :id_def;

-- Every argument, by name ---------------------------------------------------------------------
SELECT pgq.enqueue('enq_args', '{"to": "a@b.c"}', priority => 7,
                   run_at => now() + interval '1 hour', dedupe_key => 'enq-args-1',
                   headers => '{"trace": "t1"}') AS id_args \gset
SELECT row_eq(format('SELECT entrypoint, payload, priority, run_at, dedupe_key, headers FROM pgq.jobs WHERE id = %s', :id_args),
              ROW('enq_args'::text, '{"to": "a@b.c"}'::jsonb, 7, now() + interval '1 hour',
                  'enq-args-1'::text, '{"trace": "t1"}'::jsonb),
              'entrypoint, payload, priority, run_at, dedupe_key and headers are stored as given');
SELECT cmp_ok(:id_args::bigint, '>', :id_def::bigint, 'ids grow');

-- A new entrypoint is registered with the default policy --------------------------------------
SELECT row_eq($$SELECT concurrency_limit, max_attempts, backoff_base, backoff_max, heartbeat_timeout
                  FROM pgq.entrypoints WHERE entrypoint = 'enq_defaults'$$,
              ROW(NULL::int, 5, interval '1 second', interval '5 minutes', interval '30 seconds'),
              'first enqueue of an entrypoint creates its policy row with the defaults');
SELECT pgq.configure('enq_configured', max_attempts => 9);
SELECT pgq.enqueue('enq_configured');
SELECT is(e.max_attempts, 9, 'enqueue keeps an existing policy row as it is')
  FROM pgq.entrypoints e WHERE e.entrypoint = 'enq_configured';

-- Entrypoint validation: PQ001 naming value and position ---------------------------------------
SELECT count(*) AS n0 FROM pgq.jobs \gset
SELECT throws_ok($$SELECT pgq.enqueue(NULL)$$, 'PQ001',
    'invalid entrypoint NULL at position 1: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
    'NULL entrypoint: PQ001');
SELECT throws_ok($$SELECT pgq.enqueue('')$$, 'PQ001',
    'invalid entrypoint '''' at position 1: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
    'empty entrypoint: PQ001');
SELECT throws_ok(format('SELECT pgq.enqueue(%L)', repeat('x', 201)), 'PQ001',
    format('invalid entrypoint %L at position 1: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL', repeat('x', 201)),
    '201-byte entrypoint: PQ001');
SELECT throws_ok(format('SELECT pgq.enqueue(%L)', repeat('é', 101)), 'PQ001', NULL,
    '101 two-byte characters (202 bytes): PQ001, the limit is in bytes');
SELECT throws_ok($$SELECT pgq.enqueue(E'send\nmail')$$, 'PQ001',
    E'invalid entrypoint ''send\nmail'' at position 1: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
    'newline in entrypoint: PQ001');
SELECT throws_ok($$SELECT pgq.enqueue(E'tab\there')$$, 'PQ001', NULL, 'tab in entrypoint: PQ001');
SELECT throws_ok($$SELECT pgq.enqueue(E'nul\x01x')$$, 'PQ001', NULL, 'control character \x01 in entrypoint: PQ001');
SELECT lives_ok(format('SELECT pgq.enqueue(%L)', repeat('y', 200)), 'a 200-byte entrypoint is accepted');
SELECT lives_ok($$SELECT pgq.enqueue('ünïcödé entrypoint')$$, 'non-ASCII and spaces are accepted');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0 + 2, 'rejected entrypoints added nothing');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.entrypoints WHERE entrypoint = '' OR entrypoint LIKE E'send\n%'),
          'rejected entrypoints registered no policy row');

-- Priority: PQ005 ---------------------------------------------------------------------------
SELECT count(*) AS n0 FROM pgq.jobs \gset
SELECT throws_ok($$SELECT pgq.enqueue('enq_prio', priority => 32768)$$, 'PQ005',
    'priority 32768 at position 1 is out of range (-32768 to 32767)', 'priority 32768: PQ005');
SELECT throws_ok($$SELECT pgq.enqueue('enq_prio', priority => -32769)$$, 'PQ005',
    'priority -32769 at position 1 is out of range (-32768 to 32767)', 'priority -32769: PQ005');
SELECT lives_ok($$SELECT pgq.enqueue('enq_prio', priority => 32767)$$, 'priority 32767 is accepted');
SELECT lives_ok($$SELECT pgq.enqueue('enq_prio', priority => -32768)$$, 'priority -32768 is accepted');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0 + 2, 'rejected priorities added nothing');

-- Payload size: PQ006 -----------------------------------------------------------------------
SELECT count(*) AS n0 FROM pgq.jobs \gset
SELECT throws_ok($$SELECT pgq.enqueue('enq_big', jsonb_build_object('blob', repeat('x', 1100000)))$$,
    'PQ006', NULL, 'payload over 1 MiB: PQ006');
SELECT throws_like($$SELECT pgq.enqueue('enq_big', jsonb_build_object('blob', repeat('x', 1100000)))$$,
    'payload at position 1 is % bytes, over the 1048576-byte limit', 'PQ006 names the position and the size');
SELECT lives_ok($$SELECT pgq.enqueue('enq_big', jsonb_build_object('blob', repeat('x', 1000000)))$$,
    'payload just under 1 MiB is accepted');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0 + 1, 'the oversized payload added nothing');

-- Headers and on_conflict: PQ009 ------------------------------------------------------------
SELECT count(*) AS n0 FROM pgq.jobs \gset
SELECT throws_ok($$SELECT pgq.enqueue('enq_h', headers => '["a"]')$$, 'PQ009',
    'headers at position 1 must be a JSON object, got array', 'headers as an array: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue('enq_h', headers => '"a"')$$, 'PQ009', NULL, 'headers as a string: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue('enq_h', headers => 'null')$$, 'PQ009', NULL, 'headers as JSON null: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue('enq_h', on_conflict => 'ignore')$$, 'PQ009',
    'on_conflict must be ''raise'' or ''existing'', got ''ignore''', 'unknown on_conflict: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue('enq_h', on_conflict => NULL)$$, 'PQ009', NULL, 'NULL on_conflict: PQ009');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0, 'rejected headers and on_conflict added nothing');

-- Dedupe keys: PQ007, on_conflict => 'existing', reuse after finishing ----------------------
SELECT pgq.enqueue('enq_dd', '{"n": 1}', dedupe_key => 'dd-1') AS id_dd \gset
SELECT count(*) AS n0 FROM pgq.jobs \gset
SELECT throws_ok($$SELECT pgq.enqueue('enq_dd', '{"n": 2}', dedupe_key => 'dd-1')$$, 'PQ007',
    'dedupe key ''dd-1'' is already held by a live job', 'a live dedupe key clashes: PQ007');
SELECT throws_ok($$SELECT pgq.enqueue('enq_other', dedupe_key => 'dd-1')$$, 'PQ007', NULL,
    'dedupe keys are global, not per entrypoint');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0, 'the clash added nothing');
SELECT is(pgq.enqueue('enq_dd', '{"n": 3}', dedupe_key => 'dd-1', on_conflict => 'existing'), :id_dd::bigint,
          'on_conflict => existing returns the id of the live holder');
SELECT is((SELECT payload FROM pgq.jobs WHERE id = :id_dd), '{"n": 1}'::jsonb, 'the holder is left unchanged');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0, 'on_conflict => existing added nothing');

SELECT id AS c_id, lease AS c_lease
  FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{enq_dd}') \gset
SELECT is(:c_id::bigint, :id_dd::bigint, 'the holder is claimed');
SELECT is(pgq.enqueue('enq_dd', dedupe_key => 'dd-1', on_conflict => 'existing'), :id_dd::bigint,
          'a running job still holds its key');
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:c_id]::bigint[], ARRAY[:c_lease]::bigint[],
                    '{successful}');
SELECT pgq.enqueue('enq_dd', '{"n": 4}', dedupe_key => 'dd-1') AS id_dd2 \gset
SELECT isnt(:id_dd2::bigint, :id_dd::bigint, 'once the holder finished, the key can be used again');
SELECT is((SELECT payload FROM pgq.jobs WHERE dedupe_key = 'dd-1'), '{"n": 4}'::jsonb, 'the new job holds the key');

-- delay: resolved on the server's clock -----------------------------------------------------------
SELECT pgq.enqueue('enq_delay', delay => interval '90 seconds') AS dl \gset
SELECT is((SELECT run_at FROM pgq.jobs WHERE id = :dl), now() + interval '90 seconds', 'delay: due that long after now()');
SELECT throws_ok($$SELECT pgq.enqueue('enq_delay', run_at => now(), delay => interval '1 second')$$, 'PQ009', NULL,
                 'run_at and delay together: PQ009');

SELECT * FROM finish();
ROLLBACK;
