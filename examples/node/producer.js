// A pgq-thin producer in Node.js: enqueues jobs in one call and prints their ids (JSON array).
//
//   node producer.js ENTRYPOINT [PAYLOAD_JSON ...] [--delay SECONDS]
//
// One job per PAYLOAD_JSON (any JSON value; one job with a NULL payload when none is given),
// due now or SECONDS from now (the server's now). Connection as for worker.js.
import pg from 'pg';
import * as SQL from './sql.js';

const args = process.argv.slice(2);
const at = args.indexOf('--delay');
const delayS = at >= 0 ? Number(args.splice(at, 2)[1]) : 0;
const [entrypoint, ...texts] = args;
if (!entrypoint || Number.isNaN(delayS)) {
  console.error('usage: node producer.js ENTRYPOINT [PAYLOAD_JSON ...] [--delay SECONDS]');
  process.exit(64);
}
const payloads = texts.length ? texts.map((text) => JSON.parse(text)) : [null];

const db = new pg.Client({ connectionString: process.env.PGQ_DSN, application_name: 'producer' });
await db.connect();
try {
  const { rows } = await db.query(SQL.ENQUEUE_MANY,
    [payloads.map(() => entrypoint), JSON.stringify(payloads), delayS]);
  console.log(JSON.stringify(rows.map((row) => row.id)));  // bigint ids arrive as strings
} catch (err) {
  // Bad input raises a documented SQLSTATE of class PQ (docs/errors.md): look at err.code.
  console.error(`enqueue failed: ${err.code} ${err.message}`);
  process.exitCode = 1;
} finally {
  await db.end();
}
