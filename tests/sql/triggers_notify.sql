-- NOTIFY on pgq_events: pgq._notify chunking, and what the statement-level triggers on pgq.jobs send.
-- NOTIFY is delivered only at commit, and this file rolls back; delivery is tested from Python.
-- Here the payloads are observed by pointing pgq._notify at a recording pg_notify (pgq.pg_notify,
-- found first through the function's search_path) for the rest of this transaction.
BEGIN;
SELECT plan(31);

-- The real pgq._notify: big inputs stay under the 8000-byte limit ----------------------------
SELECT throws_ok($$SELECT pg_notify('pgq_events', (SELECT jsonb_build_object('kind', 'cancel', 'ids',
                                    jsonb_agg(9000000000000000000 - g))::text FROM generate_series(1, 5000) g))$$,
                 '22023', NULL, 'control: 5000 ids in one payload are over the NOTIFY limit');
SELECT lives_ok($$SELECT pgq._notify('cancel', 'ids', (SELECT jsonb_agg(9000000000000000000 - g) FROM generate_series(1, 5000) g))$$,
                'pgq._notify sends 5000 (19-digit) ids without error');
SELECT lives_ok($$SELECT pgq._notify('enqueued', 'entrypoints',
                                     (SELECT jsonb_agg(repeat('"', 199) || g % 10) FROM generate_series(1, 500) g))$$,
                'pgq._notify sends 500 entrypoints of 200 bytes (each escaped to ~400) without error');
SELECT lives_ok($$SELECT pgq._notify('enqueued', 'entrypoints', NULL)$$, 'NULL values: no error');

-- Record what pgq._notify would send -----------------------------------------------------------
CREATE TABLE public.pgq_test_notes (n serial PRIMARY KEY, channel text, payload text);
CREATE FUNCTION pgq.pg_notify(channel text, payload text) RETURNS void LANGUAGE sql AS
    $$ INSERT INTO public.pgq_test_notes (channel, payload) VALUES (channel, payload) $$;
ALTER FUNCTION pgq._notify(text, text, jsonb) SET search_path = pgq, pg_catalog, pg_temp;

SELECT pgq._notify('cancel', 'ids', (SELECT jsonb_agg(9000000000000000000 - g) FROM generate_series(1, 5000) g));
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 10, '5000 ids: at most 10 notifications of at most 300 (the volume of one call is bounded)');
SELECT ok((SELECT bool_and(octet_length(payload) < 8000 AND channel = 'pgq_events') FROM pgq_test_notes),
          'each on pgq_events and under 8000 bytes');
SELECT is((SELECT jsonb_agg(v ORDER BY n, o) FROM pgq_test_notes,
                  jsonb_array_elements(payload::jsonb -> 'ids') WITH ORDINALITY AS e(v, o)),
          (SELECT jsonb_agg(9000000000000000000 - g ORDER BY g) FROM generate_series(1, 3000) g),
          'together they carry the first 3000 ids once, in order (workers learn the rest from heartbeats)');
SELECT ok((SELECT bool_and(payload::jsonb ->> 'kind' = 'cancel') FROM pgq_test_notes), 'each says kind cancel');
TRUNCATE pgq_test_notes;
SELECT pgq._notify('enqueued', 'entrypoints', (SELECT jsonb_agg(repeat('"', 199) || g % 10) FROM generate_series(1, 500) g));
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 10, '500 entrypoints: at most 10 notifications of at most 15 (the rest is found by polling)');
SELECT ok((SELECT max(octet_length(payload)) < 8000 FROM pgq_test_notes), 'the largest (all quotes, escaped) is under 8000 bytes');
TRUNCATE pgq_test_notes;
SELECT pgq._notify('enqueued', 'entrypoints', NULL);
SELECT pgq._notify('enqueued', 'entrypoints', '[]');
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 0, 'NULL or empty values: nothing sent');

-- Insert: enqueued, with entrypoint names only -------------------------------------------------
-- (tn_b's jobs stay running across the claims at a later clock below: no stale sweep of them)
SELECT pgq.configure('tn_b', heartbeat_timeout => interval '7 days');
TRUNCATE pgq_test_notes;
SELECT count(*) FROM pgq.enqueue_many(ARRAY['tn_b', 'tn_a', 'tn_b'],
                                      payloads => '[{"secret": "s3cr3t"}, {}, {}]',
                                      headers => '[{"token": "t0k3n"}, null, null]');
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "enqueued", "entrypoints": ["tn_a", "tn_b"]}'::jsonb)$$,
                  'enqueue_many: one notification naming each entrypoint once');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq_test_notes WHERE payload LIKE '%s3cr3t%' OR payload LIKE '%t0k3n%'),
          'no payload or header data in notifications');

-- Update: claims and heartbeats send nothing; retry and release send enqueued; cancel flags send cancel.
TRUNCATE pgq_test_notes;
CREATE TEMP TABLE c AS SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{tn_a,tn_b}', 3, now());
SELECT pgq.heartbeat('11111111-1111-1111-1111-111111111111', (SELECT array_agg(id) FROM c), (SELECT array_agg(lease) FROM c));
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 0, 'claim and heartbeat send nothing');

SELECT id AS a_id, lease AS a_l FROM c WHERE entrypoint = 'tn_a' \gset
SELECT id AS b1, lease AS b1_l FROM c WHERE entrypoint = 'tn_b' ORDER BY id LIMIT 1 \gset
SELECT id AS b2, lease AS b2_l FROM c WHERE entrypoint = 'tn_b' ORDER BY id DESC LIMIT 1 \gset

SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:a_id]::bigint[], ARRAY[:a_l]::bigint[], '{failed}');
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "scheduled", "entrypoints": ["tn_a"]}'::jsonb)$$,
                  'a failed attempt queued for a retry after its backoff: scheduled (not enqueued: nothing is due yet)');
TRUNCATE pgq_test_notes;
SELECT lease AS a_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{tn_a}', 1, now() + interval '1 hour') \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:a_id]::bigint[], ARRAY[:a_l]::bigint[], '{interrupted}');
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "enqueued", "entrypoints": ["tn_a"]}'::jsonb),
                           ('{"kind": "enqueued", "entrypoints": ["tn_a"]}'::jsonb)$$,
                  'the claim promoting the due retry: enqueued; an interrupted attempt, due again at once: enqueued');
TRUNCATE pgq_test_notes;
SELECT count(*) FROM pgq.enqueue_many(ARRAY['tn_c', 'tn_d', 'tn_c'], delays => ARRAY[interval '1 minute', NULL, NULL]);
SELECT pgq.enqueue('tn_e', delay => interval '1 second');
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "enqueued", "entrypoints": ["tn_c", "tn_d"]}'::jsonb),
                           ('{"kind": "scheduled", "entrypoints": ["tn_c"]}'::jsonb),
                           ('{"kind": "scheduled", "entrypoints": ["tn_e"]}'::jsonb)$$,
                  'enqueue: jobs due now send enqueued, jobs due later scheduled');
TRUNCATE pgq_test_notes;
SELECT pgq.release('11111111-1111-1111-1111-111111111111', ARRAY[:b1]::bigint[], ARRAY[:b1_l]::bigint[]);
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "enqueued", "entrypoints": ["tn_b"]}'::jsonb)$$,
                  'a release: enqueued');
TRUNCATE pgq_test_notes;
SELECT pgq.cancel(ARRAY[:b2]::bigint[]);
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  format($$VALUES ('{"kind": "cancel", "ids": [%s]}'::jsonb)$$, :b2),
                  'cancel of a running job: cancel with its id');
TRUNCATE pgq_test_notes;
SELECT pgq.cancel(ARRAY[:b2]::bigint[]);
SELECT pgq.heartbeat('11111111-1111-1111-1111-111111111111', ARRAY[:b2]::bigint[], ARRAY[:b2_l]::bigint[]);
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 0, 'cancel again, or heartbeat of a flagged job: nothing');

-- Delete: only a running job of a limited entrypoint frees a slot worth announcing.
TRUNCATE pgq_test_notes;
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:b2]::bigint[], ARRAY[:b2_l]::bigint[], '{canceled}');
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 0, 'a running job of an unlimited entrypoint finishes: nothing');
SELECT pgq.enqueue('tn_q') AS q \gset
TRUNCATE pgq_test_notes;
SELECT pgq.cancel(ARRAY[:q]::bigint[]);
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 0, 'a queued job canceled: nothing');

SELECT pgq.configure('tn_lim', concurrency_limit => 1);
SELECT pgq.enqueue('tn_lim') AS l1 \gset
SELECT pgq.enqueue('tn_lim') AS l2 \gset
SELECT lease AS l1_l FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{tn_lim}', 1, now()) \gset
TRUNCATE pgq_test_notes;
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:l1]::bigint[], ARRAY[:l1_l]::bigint[], '{successful}');
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "enqueued", "entrypoints": ["tn_lim"]}'::jsonb)$$,
                  'a running job of a limited entrypoint finishes: enqueued (a slot is free)');
TRUNCATE pgq_test_notes;
SELECT pgq.cancel(ARRAY[:l2]::bigint[]);
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 0, 'a queued job of a limited entrypoint canceled: nothing');

-- Stale recovery: the sweep queues a stale job again (enqueued); one archived as dead frees a
-- limited slot.
SELECT pgq.configure('tn_stale', concurrency_limit => 5, max_attempts => 2);
SELECT pgq.enqueue('tn_stale') AS s \gset
SELECT id FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{tn_stale}', 1, now()) \gset
TRUNCATE pgq_test_notes;
SELECT id FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{tn_stale}', 1, now() + interval '31 seconds') \gset
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "enqueued", "entrypoints": ["tn_stale"]}'::jsonb)$$,
                  'a stale job queued again by the sweep: enqueued (before the same claim takes it)');
TRUNCATE pgq_test_notes;
SELECT count(*) FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{tn_stale}', 1, now() + interval '62 seconds');
SELECT is((SELECT status FROM pgq.job_history WHERE id = :s), 'failed', 'the stale job with no attempts left is dead');
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "enqueued", "entrypoints": ["tn_stale"]}'::jsonb)$$,
                  'and its slot is announced');

-- Requeue inserts again: enqueued.
TRUNCATE pgq_test_notes;
SELECT pgq.requeue(ARRAY[:s]::bigint[]);
SELECT results_eq('SELECT payload::jsonb FROM pgq_test_notes ORDER BY n',
                  $$VALUES ('{"kind": "enqueued", "entrypoints": ["tn_stale"]}'::jsonb)$$,
                  'requeue: enqueued');

-- The insert trigger registers new entrypoints, also for a direct insert.
INSERT INTO pgq.jobs (entrypoint, ready_seq) VALUES ('tn_direct', nextval('pgq.ready_seq'));
SELECT row_eq($$SELECT max_attempts, concurrency_limit FROM pgq.entrypoints WHERE entrypoint = 'tn_direct'$$,
              ROW(5, NULL::int), 'a job inserted directly still gets a default policy row');

-- A big enqueue is chunked by the trigger too.
TRUNCATE pgq_test_notes;
SELECT count(*) FROM pgq.enqueue_many((SELECT array_agg(format('tn_many_%s', g)) FROM generate_series(1, 40) g));
SELECT is((SELECT count(*)::int FROM pgq_test_notes), 3, '40 new entrypoints in one statement: 3 notifications');
SELECT is((SELECT count(*)::int FROM pgq_test_notes, jsonb_array_elements_text(payload::jsonb -> 'entrypoints')), 40,
          'naming all 40');

SELECT * FROM finish();
ROLLBACK;
