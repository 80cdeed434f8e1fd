-- pgq.heartbeat: ok / lost / cancel_requested per id, in input order; zombies are not refreshed;
-- argument errors.
BEGIN;
SELECT plan(26);

SELECT count(*) FROM (SELECT pgq.enqueue('hb', jsonb_build_object('n', g)) FROM generate_series(1, 4) g) e;
CREATE TEMP TABLE c AS
SELECT * FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{hb}', 4, now()) WITH ORDINALITY;
SELECT is((SELECT count(*)::int FROM c), 4, 'four jobs claimed');

-- ok: refreshes heartbeat_at --------------------------------------------------------------------
SELECT results_eq(
    $$SELECT h.id, h.state FROM pgq.heartbeat('11111111-1111-1111-1111-111111111111',
                                              (SELECT array_agg(id ORDER BY ordinality) FROM c),
                                              (SELECT array_agg(lease ORDER BY ordinality) FROM c),
                                              now() + interval '10 seconds') h$$,
    $$SELECT id, 'ok'::text FROM c ORDER BY ordinality$$,
    'every owned job: ok');
SELECT is((SELECT count(*)::int FROM pgq.jobs WHERE entrypoint = 'hb' AND heartbeat_at = now() + interval '10 seconds'), 4,
          'heartbeat_at = at for every owned job');

-- Results in input order, whatever the id order -------------------------------------------
SELECT results_eq(
    $$SELECT h.id FROM pgq.heartbeat('11111111-1111-1111-1111-111111111111',
                                     (SELECT array_agg(id ORDER BY id DESC) FROM c),
                                     (SELECT array_agg(lease ORDER BY id DESC) FROM c),
                                     now() + interval '11 seconds') h$$,
    $$SELECT id FROM c ORDER BY id DESC$$,
    'one row per id, in input order');

-- lost: wrong lease, wrong worker, unknown id, finished job ----------------------------------
SELECT id AS j1, lease AS l1 FROM c WHERE ordinality = 1 \gset
SELECT id AS j2, lease AS l2 FROM c WHERE ordinality = 2 \gset
SELECT id AS j3, lease AS l3 FROM c WHERE ordinality = 3 \gset
SELECT id AS j4, lease AS l4 FROM c WHERE ordinality = 4 \gset
SELECT pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[:j4]::bigint[], ARRAY[:l4]::bigint[], '{successful}');
SELECT pgq.cancel(ARRAY[:j3]::bigint[]);

CREATE TEMP TABLE mix AS
SELECT h.*
  FROM pgq.heartbeat('11111111-1111-1111-1111-111111111111',
                     ARRAY[:j1, :j2, -1, :j3, :j4]::bigint[],
                     ARRAY[:l1 + 1000000, :l2, :l1, :l3, :l4]::bigint[],
                     now() + interval '20 seconds') WITH ORDINALITY AS h;
SELECT results_eq($$SELECT id, state FROM mix ORDER BY ordinality$$,
                  format($$VALUES (%s::bigint, 'lost'::text), (%s, 'ok'), (-1, 'lost'), (%s, 'cancel_requested'), (%s, 'lost')$$,
                         :j1, :j2, :j3, :j4),
                  'wrong lease: lost; owned: ok; unknown id: lost; flagged: cancel_requested; finished: lost');
SELECT is((SELECT heartbeat_at FROM pgq.jobs WHERE id = :j1), now() + interval '11 seconds',
          'a wrong lease does not refresh the heartbeat');
SELECT is((SELECT heartbeat_at FROM pgq.jobs WHERE id = :j2), now() + interval '20 seconds', 'an owned job is refreshed');
SELECT is((SELECT heartbeat_at FROM pgq.jobs WHERE id = :j3), now() + interval '20 seconds',
          'a job flagged for cancellation is still refreshed (its worker still owns it)');
SELECT ok(NOT EXISTS (SELECT 1 FROM pgq.jobs WHERE id = :j4), 'the finished job stays finished');

SELECT results_eq(
    format($$SELECT state FROM pgq.heartbeat('22222222-2222-2222-2222-222222222222', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                             now() + interval '21 seconds')$$, :j2, :l2),
    ARRAY['lost'], 'the right lease from the wrong worker: lost');
SELECT is((SELECT heartbeat_at FROM pgq.jobs WHERE id = :j2), now() + interval '20 seconds',
          'and the heartbeat is not refreshed');

SELECT is((SELECT count(*)::int FROM pgq.heartbeat('11111111-1111-1111-1111-111111111111', '{}', '{}')), 0,
          'empty arrays: no rows, no error');

-- Zombie: after a stale re-claim the old lease is lost and cannot refresh anything ---------------
SELECT pgq.enqueue('hb_zombie') AS z \gset
SELECT lease AS zl1 FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{hb_zombie}', 1, now()) \gset
SELECT lease AS zl2 FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{hb_zombie}', 1, now() + interval '31 seconds') \gset
SELECT results_eq(
    format($$SELECT state FROM pgq.heartbeat('11111111-1111-1111-1111-111111111111', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                             now() + interval '40 seconds')$$, :z, :zl1),
    ARRAY['lost'], 'the zombie''s heartbeat says lost');
SELECT row_eq(format('SELECT heartbeat_at, lease, worker_id FROM pgq.jobs WHERE id = %s', :z),
              ROW(now() + interval '31 seconds', :zl2::bigint, '22222222-2222-2222-2222-222222222222'::uuid),
              'the zombie did not change heartbeat_at, lease or owner');
SELECT results_eq(
    format($$SELECT state FROM pgq.heartbeat('22222222-2222-2222-2222-222222222222', ARRAY[%s]::bigint[], ARRAY[%s]::bigint[],
                                             now() + interval '40 seconds')$$, :z, :zl2),
    ARRAY['ok'], 'the new owner''s heartbeat is ok');

-- Argument errors: PQ009, PQ003 ---------------------------------------------------------------
SELECT heartbeat_at AS hb_before FROM pgq.jobs WHERE id = :j2 \gset
SELECT throws_ok(format('SELECT * FROM pgq.heartbeat(NULL, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[])', :j2, :l2),
    'PQ009', 'worker_id must not be NULL', 'NULL worker_id: PQ009');
SELECT throws_ok(format('SELECT * FROM pgq.heartbeat(%L, NULL, ARRAY[%s]::bigint[])', '11111111-1111-1111-1111-111111111111', :l2),
    'PQ009', NULL, 'NULL ids: PQ009');
SELECT throws_ok(format('SELECT * FROM pgq.heartbeat(%L, ARRAY[%s, %s]::bigint[], ARRAY[%s]::bigint[])',
                        '11111111-1111-1111-1111-111111111111', :j2, :j1, :l2),
    'PQ003', 'leases has 1 elements but ids has 2', 'ids and leases of unequal length: PQ003');
SELECT throws_ok(format('SELECT * FROM pgq.heartbeat(%L, ARRAY[%s, NULL]::bigint[], ARRAY[%s, 1]::bigint[])',
                        '11111111-1111-1111-1111-111111111111', :j2, :l2),
    'PQ009', NULL, 'NULL element in ids: PQ009');
SELECT throws_ok(format('SELECT * FROM pgq.heartbeat(%L, ARRAY[%s]::bigint[], ARRAY[NULL]::bigint[])',
                        '11111111-1111-1111-1111-111111111111', :j2),
    'PQ009', NULL, 'NULL element in leases: PQ009');
SELECT throws_ok(format('SELECT * FROM pgq.heartbeat(%L, ARRAY[%s, %s]::bigint[], ARRAY[%s, %s]::bigint[])',
                        '11111111-1111-1111-1111-111111111111', :j2, :j2, :l2, :l2),
    'PQ009', format('ids must not repeat, got {%s,%s}', :j2, :j2), 'duplicate ids: PQ009');
-- Errors are raised before any row is touched, even with a valid element first.
SELECT throws_ok(format('SELECT * FROM pgq.heartbeat(%L, ARRAY[%s, %s]::bigint[], ARRAY[%s, %s]::bigint[], now() + interval ''1 hour'')',
                        '11111111-1111-1111-1111-111111111111', :j2, :j2, :l2, :l2),
    'PQ009', NULL, 'duplicate ids with a later at: PQ009');
SELECT is((SELECT heartbeat_at FROM pgq.jobs WHERE id = :j2), :'hb_before'::timestamptz,
          'failed heartbeat calls changed nothing');

-- timed_out also when a sweep ended the attempt first (the error entry names the lease) -----
SELECT pgq.configure('hb_to', run_timeout => interval '1 second', max_attempts => 2);
SELECT pgq.enqueue('hb_to') AS t1 \gset
SELECT pgq.enqueue('hb_to') AS t2 \gset
SELECT lease AS tl1 FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{hb_to}', 1, now()) \gset
SELECT lease AS tl2 FROM pgq.claim('33333333-3333-3333-3333-333333333333', '{hb_to}', 1, now()) \gset
SELECT is((SELECT swept FROM pgq.maintain(now() + interval '5 seconds')), 2,
          'the sweep ends both attempts past their limit');
SELECT results_eq(
    format('SELECT state FROM pgq.heartbeat(%L, ARRAY[%s, %s]::bigint[], ARRAY[%s, %s]::bigint[], now() + interval ''6 seconds'')',
           '33333333-3333-3333-3333-333333333333', :t1, :t2, :tl1, :tl2),
    $$VALUES ('timed_out'), ('timed_out')$$,
    'heartbeat after the sweep: timed_out for the leases SQL timed out, not lost');
SELECT results_eq(
    format('SELECT state FROM pgq.heartbeat(%L, ARRAY[%s]::bigint[], ARRAY[%s]::bigint[], now() + interval ''6 seconds'')',
           '44444444-4444-4444-4444-444444444444', :t1, :tl1),
    $$VALUES ('lost')$$,
    'another worker with the same lease number: lost');

SELECT * FROM finish();
ROLLBACK;
