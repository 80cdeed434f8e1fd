// A workflow built from Node.js through plain SQL: a fan-out and a fan-in in one statement.
//
//   node workflow.js N
//
// Enqueues one `echo` job, N `square` jobs that wait for it (payload {"n": i}) and one `sum`
// job that waits for every square and adds their results (see worker.js): the whole graph is
// one call of pgq.enqueue_many with depends_on, so nothing runs before it is all there. Prints
// the ids (JSON array, bigint ids as strings). Connection as for worker.js.
import pg from 'pg';
import * as SQL from './sql.js';

const n = Number(process.argv[2] || 3);
if (!Number.isInteger(n) || n < 1) {
  console.error('usage: node workflow.js N   (N >= 1 squares)');
  process.exit(64);
}
const entrypoints = ['echo', ...Array(n).fill('square'), 'sum'];
const payloads = [{ start: n }, ...Array.from({ length: n }, (_, i) => ({ n: i + 1 })), null];
// Positions are 1-based, in this call: the squares wait for job 1, the sum for jobs 2..n+1.
const dependsOn = [null, ...Array(n).fill([1]), Array.from({ length: n }, (_, i) => i + 2)];

const db = new pg.Client({ connectionString: process.env.PGQ_DSN, application_name: 'workflow' });
await db.connect();
try {
  const { rows } = await db.query(SQL.ENQUEUE_GRAPH,
    [entrypoints, JSON.stringify(payloads), JSON.stringify(dependsOn)]);
  console.log(JSON.stringify(rows.map((row) => row.id)));
} catch (err) {
  console.error(`enqueue failed: ${err.code} ${err.message}`);
  process.exitCode = 1;
} finally {
  await db.end();
}
