-- pgq.list_jobs: jobs of one entrypoint by state, keyset-paged: queued in claim order, running by
-- id, finished newest first; every page continues exactly where the last one stopped.
BEGIN;
SELECT plan(20);

-- 7 queued jobs over three priorities (claim order: priority desc, then ready order)
CREATE TEMP TABLE q AS
SELECT pgq.enqueue('lj', jsonb_build_object('k', k), priority => p, run_at => now() - r * interval '1 second') AS id, k
  FROM (VALUES (1, 0, 5), (2, 5, 1), (3, 0, 5), (4, 5, 3), (5, -1, 9), (6, 0, 7), (7, 5, 3)) AS v(k, p, r);
CREATE TEMP TABLE claim_order AS
SELECT row_number() OVER (ORDER BY j.priority DESC, j.ready_seq) AS pos, j.id
  FROM pgq.jobs j WHERE j.entrypoint = 'lj';

-- Walk every page of 2
CREATE TEMP TABLE walked (page int, pos int, id bigint, cursor text);
DO $$
DECLARE
    v_after text;
    v_page int := 0;
    v_n int;
BEGIN
    LOOP
        v_page := v_page + 1;
        INSERT INTO walked
        SELECT v_page, row_number() OVER () + (SELECT count(*) FROM walked), l.id, l.cursor
          FROM pgq.list_jobs('lj', 'queued', v_after, 2) AS l;
        GET DIAGNOSTICS v_n = ROW_COUNT;
        EXIT WHEN v_n < 2 OR v_page > 10;
        SELECT w.cursor INTO v_after FROM walked w ORDER BY w.pos DESC LIMIT 1;
    END LOOP;
END
$$;
SELECT results_eq($$SELECT id FROM walked ORDER BY pos$$, $$SELECT id FROM claim_order ORDER BY pos$$,
                  'queued, pages of 2: every job once, in claim order (priority desc, then ready order)');
SELECT is((SELECT max(page) FROM walked), 4, 'four pages (2 + 2 + 2 + 1)');
SELECT results_eq($$SELECT status, priority, attempt FROM pgq.list_jobs('lj', 'queued', NULL, 1)$$,
                  $$VALUES ('queued'::text, 5, 0)$$, 'columns of a queued job');
SELECT matches((SELECT cursor FROM pgq.list_jobs('lj', 'queued', NULL, 1)), '^q,5,', 'a queued cursor carries the priority');

-- A job claimed between two pages does not shift the next page
SELECT cursor AS c2 FROM walked WHERE pos = 2 \gset
SELECT count(*) FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{lj}', 1);
SELECT results_eq(format($$SELECT id FROM pgq.list_jobs('lj', 'queued', %L, 2)$$, :'c2'),
                  $$SELECT id FROM claim_order WHERE pos IN (3, 4) ORDER BY pos$$,
                  'a claim before the next page: the page still starts after the cursor');

-- running: by id, paged
SELECT count(*) FROM pgq.claim('11111111-1111-1111-1111-111111111111', '{lj}', 2);
SELECT results_eq($$SELECT id FROM pgq.list_jobs('lj', 'running', NULL, 2)$$,
                  $$SELECT id FROM pgq.jobs WHERE entrypoint = 'lj' AND status = 'running' ORDER BY id LIMIT 2$$,
                  'running: first page by id');
SELECT results_eq(format($$SELECT id FROM pgq.list_jobs('lj', 'running', 'r,%s', 2)$$,
                         (SELECT id FROM pgq.jobs WHERE entrypoint = 'lj' AND status = 'running' ORDER BY id LIMIT 1 OFFSET 1)),
                  $$SELECT id FROM pgq.jobs WHERE entrypoint = 'lj' AND status = 'running' ORDER BY id OFFSET 2$$,
                  'running: next page after the cursor');
SELECT is((SELECT worker_id FROM pgq.list_jobs('lj', 'running', NULL, 1)), '11111111-1111-1111-1111-111111111111'::uuid,
          'with its worker');

-- history: newest first; a retried live job shows its last error
SELECT pgq.configure('lj.h', max_attempts => 1);
CREATE TEMP TABLE h AS
SELECT pgq.enqueue('lj.h', jsonb_build_object('k', k)) AS id, k FROM generate_series(1, 5) AS k;
DO $$
DECLARE c record;
BEGIN
    FOR c IN SELECT * FROM pgq.claim('22222222-2222-2222-2222-222222222222', '{lj.h}', 5) LOOP
        -- job k finishes at now() + k seconds (jobs 4 and 5 at the same time)
        PERFORM pgq.complete('22222222-2222-2222-2222-222222222222', ARRAY[c.id], ARRAY[c.lease], '{failed}',
                             jsonb_build_array(jsonb_build_object('error', 'E' || (c.payload ->> 'k'), 'message', 'm')),
                             now() + least((c.payload ->> 'k')::int, 4) * interval '1 second');
    END LOOP;
END
$$;
SELECT results_eq($$SELECT id FROM pgq.list_jobs('lj.h', 'failed', NULL, 3)$$,
                  $$SELECT id FROM h ORDER BY least(k, 4) DESC, id DESC LIMIT 3$$, 'failed: newest first, ties by id desc');
SELECT cursor AS hc FROM pgq.list_jobs('lj.h', 'failed', NULL, 3) OFFSET 2 LIMIT 1 \gset
SELECT results_eq(format($$SELECT id FROM pgq.list_jobs('lj.h', 'failed', %L, 3)$$, :'hc'),
                  $$SELECT id FROM h ORDER BY least(k, 4) DESC, id DESC OFFSET 3$$, 'the next page continues after the cursor');
SELECT row_eq($$SELECT error, message FROM pgq.list_jobs('lj.h', 'failed', NULL, 1)$$, ROW('E5'::text, 'm'::text),
              'error and message of the last failure');
SELECT is((SELECT count(*)::int FROM pgq.list_jobs('lj.h', 'successful')), 0, 'no successful jobs');

-- Errors --------------------------------------------------------------------------------------------
SELECT throws_ok($$SELECT * FROM pgq.list_jobs('lj', 'dead')$$, 'PQ009',
                 'state must be scheduled, queued, running, successful, failed or canceled, got ''dead''', 'unknown state: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.list_jobs('lj', 'queued', 'garbage')$$, 'PQ009',
                 'invalid cursor ''garbage'': pass the cursor column of the previous page of the same listing', 'a bad cursor: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.list_jobs('lj', 'queued', 'r,5')$$, 'PQ009', NULL, 'a cursor of another state: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.list_jobs('lj', 'queued', 'q,x,1')$$, 'PQ009', NULL, 'a cursor that does not cast: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.list_jobs('lj', 'queued', NULL, 0)$$, 'PQ002', 'page_size must be between 1 and 1000, got 0',
                 'page_size 0: PQ002');
SELECT throws_ok($$SELECT * FROM pgq.list_jobs(NULL, 'queued')$$, 'PQ001', NULL, 'NULL entrypoint: PQ001');

-- scheduled: jobs not due yet, by due time, keyset-paged ------------------------------------------
SELECT pgq.enqueue('lj.s', delay => interval '2 hours') AS ls2 \gset
SELECT pgq.enqueue('lj.s', delay => interval '1 hour') AS ls1 \gset
SELECT results_eq($$SELECT id, status FROM pgq.list_jobs('lj.s', 'scheduled', page_size => 1)$$,
                  format($$VALUES (%s::bigint, 'scheduled'::text)$$, :ls1), 'scheduled: earliest due first');
SELECT results_eq(format($$SELECT id FROM pgq.list_jobs('lj.s', 'scheduled',
                                    (SELECT cursor FROM pgq.list_jobs('lj.s', 'scheduled', page_size => 1)))$$),
                  format('VALUES (%s::bigint)', :ls2), 'the next page from its cursor');

SELECT * FROM finish();
ROLLBACK;
