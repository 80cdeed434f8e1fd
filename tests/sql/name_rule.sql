-- One name rule (pgq._valid_name) for entrypoints and schedule names, in the functions and the
-- constraints: a name reads back unchanged from an unquoted array literal.
BEGIN;
SELECT plan(27);

-- What the rule accepts and refuses --------------------------------------------------------------
SELECT ok(pgq._valid_name(n), format('accepted: %s', n))
  FROM unnest(ARRAY['a', 'emails.send', 'a b', 'ünïcode.名前', 'x:y/z-1_2', repeat('a', 200), 'nullable']) AS n;
SELECT ok(NOT pgq._valid_name(n), format('refused: %s', quote_literal(n)))
  FROM unnest(ARRAY['', 'a,b', '{a}', 'a"b', 'a\b', ' a', 'a ', 'NULL', 'null', repeat('a', 201)]) AS n;
SELECT is(pgq._valid_name(NULL), NULL, 'NULL for NULL');

-- Every way in refuses it with PQ001 and the characters allowed ----------------------------------
SELECT throws_ok($$SELECT pgq.enqueue('a,b')$$, 'PQ001',
    'invalid entrypoint ''a,b'' at position 1: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
    'enqueue: PQ001 saying which characters are allowed');
SELECT throws_ok($$SELECT * FROM pgq.enqueue_many(ARRAY['ok.name', '{x}'])$$, 'PQ001',
    'invalid entrypoint ''{x}'' at position 2: must be 1 to 200 bytes without control characters, commas, braces, double quotes, backslashes or surrounding spaces, and not the word NULL',
    'enqueue_many: the bad name and its position');
SELECT throws_ok($$SELECT pgq.configure(' padded')$$, 'PQ001', NULL, 'configure: PQ001');
SELECT throws_ok($$SELECT pgq.schedule('nightly,report', 'ok.name', '0 3 * * *', now())$$, 'PQ011', NULL, 'schedule name: PQ011');
SELECT throws_ok($$SELECT pgq.schedule('nightly', 'a"b', '0 3 * * *', now())$$, 'PQ001', NULL, 'schedule entrypoint: PQ001');
SELECT is((SELECT count(*) FROM pgq.jobs), 0::bigint, 'nothing was added');

-- The constraints say the same as the functions --------------------------------------------------
SELECT throws_ok($$INSERT INTO pgq.jobs (entrypoint, ready_seq) VALUES ('a,b', 1)$$, '23514', NULL,
    'a job''s name is refused by the CHECK constraint of its entrypoint row');
SELECT throws_ok($$INSERT INTO pgq.entrypoints (entrypoint) VALUES ('a}')$$, '23514', NULL,
    'pgq.entrypoints refuses the name in its CHECK constraint');
SELECT throws_ok($$INSERT INTO pgq.schedules (name, entrypoint, cron, next_run_at) VALUES ('s', 'x}', '* * * * *', now())$$, '23514', NULL,
    'pgq.schedules refuses the name in its CHECK constraint');

SELECT * FROM finish();
ROLLBACK;
