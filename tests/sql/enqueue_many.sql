-- pgq.enqueue_many: batches, input order, per-element defaults, array lengths (PQ003),
-- element validation naming the position, dedupe keys within and across batches.
BEGIN;
SELECT plan(44);

-- Ids come back in input order, one per element ----------------------------------------------
CREATE TEMP TABLE got AS
SELECT t.id, t.ord
  FROM pgq.enqueue_many(ARRAY['em_b', 'em_a', 'em_c', 'em_a'],
                        payloads => '[{"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}]',
                        priorities => ARRAY[1, 2, 3, 4]) WITH ORDINALITY AS t(id, ord);

SELECT is((SELECT count(*)::int FROM got), 4, 'one id per element');
SELECT is((SELECT count(DISTINCT id)::int FROM got), 4, 'ids are distinct');
SELECT results_eq($$SELECT j.payload FROM got g JOIN pgq.jobs j ON j.id = g.id ORDER BY g.ord$$,
                  $$VALUES ('{"n": 1}'::jsonb), ('{"n": 2}'), ('{"n": 3}'), ('{"n": 4}')$$,
                  'the n-th id is the job made from the n-th element');
SELECT results_eq($$SELECT j.entrypoint, j.priority FROM got g JOIN pgq.jobs j ON j.id = g.id ORDER BY g.ord$$,
                  $$VALUES ('em_b'::text, 1), ('em_a', 2), ('em_c', 3), ('em_a', 4)$$,
                  'entrypoints and priorities line up with their elements');
SELECT set_eq($$SELECT entrypoint FROM pgq.entrypoints WHERE entrypoint LIKE 'em\__'$$,
              ARRAY['em_a', 'em_b', 'em_c'], 'each new entrypoint gets one policy row');

-- Input order, not claim order: reversed run_ats and priorities.
CREATE TEMP TABLE rev AS
SELECT t.id, t.ord
  FROM pgq.enqueue_many(ARRAY['em_o', 'em_o', 'em_o'],
                        payloads => '[{"k": "x"}, {"k": "y"}, {"k": "z"}]',
                        run_ats => ARRAY[now() + interval '3 s', now() + interval '2 s', now() + interval '1 s'],
                        priorities => ARRAY[-1, 0, 1]) WITH ORDINALITY AS t(id, ord);
SELECT results_eq($$SELECT j.payload ->> 'k' FROM rev r JOIN pgq.jobs j ON j.id = r.id ORDER BY r.ord$$,
                  ARRAY['x', 'y', 'z'], 'ids follow input order, not priority or due time');

-- Element defaults: NULL arrays and NULL elements ---------------------------------------------
CREATE TEMP TABLE dflt AS
SELECT t.id, t.ord
  FROM pgq.enqueue_many(ARRAY['em_d', 'em_d'],
                        payloads => '[null, {"p": 1}]',
                        priorities => ARRAY[NULL, 5]::int[],
                        run_ats => ARRAY[NULL, now() + interval '1 minute']::timestamptz[],
                        dedupe_keys => ARRAY[NULL, 'em-d-2'],
                        headers => '[null, {"h": 1}]') WITH ORDINALITY AS t(id, ord);
SELECT row_eq($$SELECT j.payload, j.priority, j.run_at, j.dedupe_key, j.headers, j.status
                 FROM dflt d JOIN pgq.jobs j ON j.id = d.id WHERE d.ord = 1$$,
              ROW(NULL::jsonb, 0, now(), NULL::text, NULL::jsonb, 'queued'::text),
              'NULL elements take the defaults (priority 0, due now)');
SELECT row_eq($$SELECT j.payload, j.priority, j.run_at, j.dedupe_key, j.headers
                 FROM dflt d JOIN pgq.jobs j ON j.id = d.id WHERE d.ord = 2$$,
              ROW('{"p": 1}'::jsonb, 5, now() + interval '1 minute', 'em-d-2'::text, '{"h": 1}'::jsonb),
              'given elements are stored');
SELECT is((SELECT count(*)::int FROM pgq.enqueue_many(ARRAY['em_only', 'em_only', 'em_only'])), 3,
          'only entrypoints: every other array defaults');

-- Arrays of unequal length: PQ003 naming the array --------------------------------------------
SELECT count(*)::int AS n0 FROM pgq.jobs \gset
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a', 'b'], payloads => '[{}]')$$, 'PQ003',
    'payloads has 1 elements but entrypoints has 2', 'short payloads: PQ003 naming payloads');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a', 'b'], priorities => ARRAY[1, 2, 3])$$, 'PQ003',
    'priorities has 3 elements but entrypoints has 2', 'long priorities: PQ003 naming priorities');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a', 'b'], run_ats => ARRAY[now()])$$, 'PQ003',
    'run_ats has 1 elements but entrypoints has 2', 'short run_ats: PQ003 naming run_ats');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a', 'b'], dedupe_keys => ARRAY['k'])$$, 'PQ003',
    'dedupe_keys has 1 elements but entrypoints has 2', 'short dedupe_keys: PQ003 naming dedupe_keys');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a', 'b'], headers => '[]')$$, 'PQ003',
    'headers has 0 elements but entrypoints has 2', 'empty headers array: PQ003 naming headers');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0, 'unequal arrays added nothing');

-- Element validation: the first bad element is named, nothing is added -------------------------
SELECT throws_ok($$SELECT pgq.enqueue_many(NULL)$$, 'PQ001', 'entrypoints must be a non-empty array, got NULL',
    'NULL entrypoints: PQ001');
SELECT throws_ok($$SELECT pgq.enqueue_many('{}')$$, 'PQ001', 'entrypoints must be a non-empty array, got {}',
    'empty entrypoints: PQ001');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['ok', 'ok', NULL])$$, 'PQ001',
    'invalid entrypoint NULL at position 3: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
    'NULL element: PQ001 naming position 3');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['ok', E'bad\r'])$$, 'PQ001',
    E'invalid entrypoint ''bad\r'' at position 2: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
    'control character: PQ001 naming the value and position 2');
SELECT throws_ok(format('SELECT pgq.enqueue_many(ARRAY[%L, %L])', 'ok', repeat('z', 201)), 'PQ001',
    format('invalid entrypoint %L at position 2: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL', repeat('z', 201)),
    'over-200-byte element: PQ001 naming position 2');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a', 'b', 'c'], priorities => ARRAY[0, 40000, -40000])$$, 'PQ005',
    'priority 40000 at position 2 is out of range (-32768 to 32767)', 'priority out of range: PQ005 naming the first bad one');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a', 'b'],
                                           payloads => jsonb_build_array('{}'::jsonb, jsonb_build_object('x', repeat('x', 1100000))))$$,
    'PQ006', NULL, 'payload over 1 MiB: PQ006');
SELECT throws_like($$SELECT pgq.enqueue_many(ARRAY['a', 'b'],
                                             payloads => jsonb_build_array('{}'::jsonb, jsonb_build_object('x', repeat('x', 1100000))))$$,
    'payload at position 2 is %', 'PQ006 names position 2');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a', 'b'], headers => '[{}, [1]]')$$, 'PQ009',
    'headers at position 2 must be a JSON object, got array', 'headers not an object: PQ009 naming position 2');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a'], on_conflict => 'skip')$$, 'PQ009', NULL,
    'bad on_conflict: PQ009');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0, 'invalid batches added nothing, not even their valid elements');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.entrypoints WHERE entrypoint IN ('ok', 'a', 'b', 'c')),
          'invalid batches registered no entrypoint');

-- Dedupe keys -------------------------------------------------------------------------------
SELECT pgq.enqueue('em_dd', dedupe_key => 'em-k1') AS holder \gset
SELECT count(*)::int AS n0 FROM pgq.jobs \gset
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['em_dd', 'em_dd', 'em_dd'], dedupe_keys => ARRAY['em-new1', 'em-k1', NULL])$$,
    'PQ007', 'dedupe key ''em-k1'' is already held by a live job', 'one clash in a batch: PQ007');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0, 'the clash added nothing, not even the other elements');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE dedupe_key = 'em-new1'), 'the non-clashing key was not taken');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['em_dd', 'em_dd'], dedupe_keys => ARRAY['em-twice', 'em-twice'])$$,
    'PQ007', 'dedupe key ''em-twice'' appears more than once in this call (positions 1 and 2)',
    'the same key twice in one batch: PQ007 naming both positions');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0, 'the in-batch clash added nothing');

CREATE TEMP TABLE ex AS
SELECT t.id, t.ord
  FROM pgq.enqueue_many(ARRAY['em_dd', 'em_dd', 'em_dd', 'em_dd'],
                        dedupe_keys => ARRAY['em-n1', 'em-k1', 'em-n1', NULL],
                        on_conflict => 'existing') WITH ORDINALITY AS t(id, ord);
SELECT is((SELECT count(*)::int FROM ex), 4, 'on_conflict => existing: one id per element');
SELECT is((SELECT id FROM ex WHERE ord = 2), :holder::bigint, 'a clashing element gets the live holder''s id');
SELECT is((SELECT id FROM ex WHERE ord = 3), (SELECT id FROM ex WHERE ord = 1),
          'a key repeated within the batch gets the id of its first element');
SELECT is((SELECT dedupe_key FROM pgq.jobs WHERE id = (SELECT id FROM ex WHERE ord = 1)), 'em-n1',
          'the first element holds the new key');
SELECT is((SELECT count(*)::int FROM pgq.jobs), :n0 + 2, 'only the two non-clashing elements were added');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE dedupe_key = 'em-k1'), 1, 'the key still has one holder');

-- A key frees up when its holder finishes (canceled here).
SELECT pgq.cancel(ARRAY[:holder]::bigint[]);
SELECT is((SELECT count(*)::int FROM pgq.enqueue_many(ARRAY['em_dd'], dedupe_keys => ARRAY['em-k1'])), 1,
          'after the holder finished the key is free again');
SELECT isnt((SELECT id FROM pgq.jobs WHERE dedupe_key = 'em-k1'), :holder::bigint, 'and a new job holds it');

-- delays, and payloads/headers as one JSON array -------------------------------------------------
CREATE TEMP TABLE em_dl AS
SELECT * FROM pgq.enqueue_many(ARRAY['em_dl', 'em_dl', 'em_dl'], '[{"a": 1}, null, 2]',
                               run_ats => ARRAY[NULL, now() + interval '1 day', NULL],
                               headers => '[null, {"h": 1}, null]',
                               delays => ARRAY[interval '1 minute', NULL, NULL]) WITH ORDINALITY AS e(id, ord);
SELECT results_eq($$SELECT j.run_at - now(), j.payload, j.headers FROM em_dl e JOIN pgq.jobs j ON j.id = e.id ORDER BY e.ord$$,
                  $$VALUES (interval '1 minute', '{"a": 1}'::jsonb, NULL::jsonb), (interval '1 day', NULL, '{"h": 1}'),
                           (interval '0', '2', NULL)$$,
                  'delays per job on the server clock; JSON null elements mean none');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a'], run_ats => ARRAY[now()], delays => ARRAY[interval '1 second'])$$,
                 'PQ009', NULL, 'run_at and delay for one job: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a'], payloads => '{"a": 1}')$$,
                 'PQ009', 'payloads must be a JSON array (element i for job i) or NULL, got object', 'payloads not an array: PQ009');
SELECT throws_ok($$SELECT pgq.enqueue_many(ARRAY['a'], delays => ARRAY[interval '1 s', interval '2 s'])$$,
                 'PQ003', 'delays has 2 elements but entrypoints has 1', 'delays of another length: PQ003');

SELECT * FROM finish();
ROLLBACK;
