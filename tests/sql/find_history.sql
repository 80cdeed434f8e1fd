-- pgq.find_history: finished jobs by entrypoint, status, finish time and error text, newest
-- first, keyset-paged.
BEGIN;
SELECT plan(15);

SELECT pgq.configure('fh.a', max_attempts => 1);
SELECT pgq.configure('fh.b', max_attempts => 1);
CREATE TEMP TABLE fh (id bigint, ep text, st text, fin interval, details jsonb);
INSERT INTO fh VALUES
    (NULL, 'fh.a', 'failed',     '1 minute',  '{"error": "TimeoutError", "message": "smtp timed out", "traceback": "File mail.py"}'),
    (NULL, 'fh.a', 'failed',     '2 minutes', '{"error": "KeyError", "message": "user", "traceback": "File db.py, line 3: SMTP"}'),
    (NULL, 'fh.a', 'failed',     '3 minutes', '"plain string failure"'),
    (NULL, 'fh.b', 'failed',     '4 minutes', '{"error": "ValueError", "message": "bad"}'),
    (NULL, 'fh.a', 'successful', '5 minutes', '{"result": 1}'),
    (NULL, 'fh.a', 'canceled',   '6 minutes', NULL);
DO $$
DECLARE r record; c record;
BEGIN
    FOR r IN SELECT * FROM fh LOOP
        UPDATE fh SET id = pgq.enqueue(r.ep) WHERE fh.fin = r.fin;
    END LOOP;
    FOR r IN SELECT * FROM fh LOOP
        SELECT * INTO c FROM pgq.claim('11111111-1111-1111-1111-111111111111', ARRAY[r.ep], 1) WHERE id = r.id;
        IF c.id IS NULL THEN
            SELECT * INTO c FROM pgq.jobs WHERE id = r.id;
        END IF;
        PERFORM pgq.complete('11111111-1111-1111-1111-111111111111', ARRAY[r.id], ARRAY[c.lease], ARRAY[r.st],
                             jsonb_build_array(r.details), now() - r.fin);
    END LOOP;
END
$$;
SELECT is((SELECT count(*)::int FROM pgq.job_history h JOIN fh USING (id) WHERE h.status = fh.st), 6, 'setup: six finished jobs');

SELECT results_eq($$SELECT id FROM pgq.find_history()$$,
                  $$SELECT id FROM fh WHERE st = 'failed' ORDER BY fin$$, 'default: every failed job, newest first');
SELECT results_eq($$SELECT id FROM pgq.find_history('fh.a')$$,
                  $$SELECT id FROM fh WHERE st = 'failed' AND ep = 'fh.a' ORDER BY fin$$, 'by entrypoint');
SELECT results_eq($$SELECT id FROM pgq.find_history('fh.a', '{successful,canceled}')$$,
                  $$SELECT id FROM fh WHERE st IN ('successful', 'canceled') AND ep = 'fh.a' ORDER BY fin$$, 'by statuses');
SELECT results_eq($$SELECT id FROM pgq.find_history(since => now() - interval '2 minutes 30 seconds', until => now() - interval '1 minute')$$,
                  $$SELECT id FROM fh WHERE fin = '2 minutes'$$, 'finished in [since, until)');
SELECT results_eq($$SELECT id FROM pgq.find_history(error => 'smtp')$$,
                  $$SELECT id FROM fh WHERE fin IN ('1 minute', '2 minutes') ORDER BY fin$$,
                  'error text, case-insensitive, in the message or the traceback');
SELECT results_eq($$SELECT id FROM pgq.find_history(error => 'KEYERROR')$$,
                  $$SELECT id FROM fh WHERE fin = '2 minutes'$$, 'in the error type');
SELECT results_eq($$SELECT id FROM pgq.find_history(error => 'string fail')$$,
                  $$SELECT id FROM fh WHERE fin = '3 minutes'$$, 'in details that are a plain JSON string');
SELECT row_eq($$SELECT entrypoint, status, error, message FROM pgq.find_history('fh.b')$$,
              ROW('fh.b'::text, 'failed'::text, 'ValueError'::text, 'bad'::text), 'error and message columns');

-- keyset paging
SELECT cursor AS c1 FROM pgq.find_history(page_size => 2) OFFSET 1 \gset
SELECT results_eq(format($$SELECT id FROM pgq.find_history(after => %L, page_size => 2)$$, :'c1'),
                  $$SELECT id FROM fh WHERE st = 'failed' ORDER BY fin OFFSET 2$$, 'the next page after the cursor');

SELECT is(pg_get_indexdef('pgq.job_history_unsuccessful_idx'::regclass),
          'CREATE INDEX job_history_unsuccessful_idx ON pgq.job_history USING btree (finished_at) WHERE (status <> ''successful''::text)',
          'failed and canceled jobs by finish time: the search without entrypoint reads only those');
SELECT throws_ok($$SELECT * FROM pgq.find_history(statuses => '{dead}')$$, 'PQ009',
                 'statuses must be a non-empty array of successful, failed, canceled, got {dead}', 'an unknown status: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.find_history(statuses => '{}')$$, 'PQ009', NULL, 'no status: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.find_history(since => now(), until => now() - interval '1 second')$$, 'PQ009', NULL,
                 'since after until: PQ009');
SELECT throws_ok($$SELECT * FROM pgq.find_history(page_size => 1001)$$, 'PQ002', 'page_size must be between 1 and 1000, got 1001',
                 'page_size 1001: PQ002');

SELECT * FROM finish();
ROLLBACK;
