// A pgq-thin worker in Node.js on the `pg` package: claim, heartbeat, complete, release.
//
//   node worker.js [ENTRYPOINT ...]      (default: every demo handler below)
//
// Connection: PGQ_DSN (a postgresql:// URL) or libpq's PGHOST, PGPORT, PGUSER, PGDATABASE...
// PGQ_WORKER_ID (a uuid; default random), PGQ_BATCH (jobs per claim, default 4),
// PGQ_POLL_MS (longest idle wait, default 5000), PGQ_GRACE_MS (see below; default: no limit).
// SIGTERM/SIGINT: finish the job in hand (within PGQ_GRACE_MS, else it is cut off and reported
// interrupted), give back the claimed jobs not started, exit 0; a second signal exits at once
// (the heartbeats stop, the leases expire, others take over).
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import * as SQL from './sql.js';

// What a handler throws to snooze (run again after `seconds`, no attempt used) or to say the
// job can never succeed (dead at once). SQL decides the rest.
class Snooze extends Error {
  constructor(seconds) { super(`snooze ${seconds} s`); this.name = 'Snooze'; this.seconds = seconds; }
}
class Fatal extends Error {
  constructor(message) { super(message); this.name = 'Fatal'; }
}

// Demo handlers, chosen by entrypoint. A handler gets the payload, an AbortSignal (aborted
// when the job was lost, canceled, timed out or cut off) and the job; what it returns is
// stored as the job's result, what it throws fails the attempt (SQL decides about the retry).
const handlers = {
  echo: async (payload) => payload,
  fail: async (payload) => { throw new Error(`demo failure: ${JSON.stringify(payload)}`); },
  flaky: async (payload, signal, job) => {  // {"fails": N}: fails its first N attempts
    if (job.attempt <= (payload?.fails ?? 1)) throw new Error(`flaky failure: attempt ${job.attempt}`);
    return 'recovered';
  },
  sleep: async (payload, signal) => {
    await sleep(payload?.ms ?? 1000, null, { signal });
    return 'slept';
  },
  nap: async (payload) => { throw new Snooze(payload?.s ?? 0.1); },
  doom: async (payload) => { throw new Fatal(`doomed: ${JSON.stringify(payload)}`); },
  // Workflow steps (workflow.js): a fan-out of squares, then a fan-in that adds what they
  // returned, read from its parents' results in one call.
  square: async (payload) => payload.n * payload.n,
  sum: async (payload, signal, job) => {
    const { rows } = await db.query(SQL.PARENT_RESULTS, [job.id]);
    return rows.filter((row) => row.status === 'successful').reduce((total, row) => total + Number(row.result), 0);
  },
};

const workerId = process.env.PGQ_WORKER_ID || randomUUID();
const entrypoints = process.argv.length > 2 ? process.argv.slice(2) : Object.keys(handlers);
const batchSize = Number(process.env.PGQ_BATCH || 4);
const pollMs = Number(process.env.PGQ_POLL_MS || 5000);
const graceMs = process.env.PGQ_GRACE_MS ? Number(process.env.PGQ_GRACE_MS) : null;
const unknown = entrypoints.filter((e) => !(e in handlers));
if (unknown.length) throw new Error(`no handler for ${unknown}; known: ${Object.keys(handlers)}`);
const log = (event, job) => console.log(job
  ? `${event} job=${job.id} entrypoint=${job.entrypoint} attempt=${job.attempt}` : event);

const config = {
  connectionString: process.env.PGQ_DSN,  // unset: libpq's PG* variables
  application_name: `node worker ${workerId}`,
};
const db = new pg.Client(config);        // claim, heartbeat, complete, release (one at a time)
const listener = new pg.Client(config);  // LISTEN only
for (const client of [db, listener]) {
  client.on('error', (err) => {
    console.error(`connection lost: ${err.message}`);  // a supervisor restarts us; leases expire
    process.exit(2);
  });
}

const held = new Map();  // id -> claimed job (started or not), with its AbortController
let stopping = false;
let woken = false;
let wakeUp = () => {};
const wake = () => { woken = true; wakeUp(); };

for (const signal of ['SIGTERM', 'SIGINT']) {
  process.on(signal, () => {
    if (stopping) process.exit(1);  // the second signal
    stopping = true;
    log('stopping');
    if (graceMs !== null) {  // then the job in hand is cut off: reported interrupted
      setTimeout(() => { for (const job of held.values()) job.stop.abort('shutdown'); }, graceMs).unref();
    }
    wake();
  });
}

// Heartbeat every job held, at a third of the shortest heartbeat timeout the claims answered,
// and just after the earliest time limit runs out (run_timeout_s, counted from the claim): the
// answer is then timed_out, SQL having failed the attempt, and the handler is stopped. With no
// job held, a beat with empty arrays at the registry's interval keeps the worker fresh there.
let beatTimer = null;
let idleBeatMs = 10000;  // replaced by the registration's answer
function scheduleBeat() {
  clearTimeout(beatTimer);
  if (stopping) return;
  const jobs = [...held.values()];
  let waitMs = jobs.length === 0
    ? idleBeatMs
    : (Math.min(...jobs.map((job) => job.heartbeat_timeout_s)) * 1000) / 3;
  for (const job of jobs) {
    if (job.deadline != null) waitMs = Math.min(waitMs, Math.max(job.deadline - Date.now() + 50, 250));
  }
  beatTimer = setTimeout(() => beat().finally(scheduleBeat), waitMs);
}

async function beat() {
  const jobs = [...held.values()];
  try {
    const { rows } = await db.query(SQL.HEARTBEAT,
      [workerId, jobs.map((j) => j.id), jobs.map((j) => j.lease)]);
    for (const { id, state } of rows) {
      if (state !== 'ok') held.get(id)?.stop.abort(state);  // lost, cancel_requested, timed_out
    }
  } catch (err) {
    console.error(`heartbeat failed: ${err.message}`);
  }
}

async function runJob(job) {
  log('started', job);
  const { signal } = job.stop;
  let outcome, details;
  try {
    const result = await handlers[job.entrypoint](job.payload, signal, job);
    [outcome, details] = ['successful', { result: result ?? null }];
  } catch (err) {
    if (signal.reason === 'timed_out') {  // SQL failed the attempt already: nothing to write
      held.delete(job.id);
      log('timed_out', job);
      return;
    }
    [outcome, details] = signal.reason === 'cancel_requested'
      ? ['canceled', { error: 'canceled' }]
      : signal.reason === 'shutdown'
        ? ['interrupted', { error: 'WorkerShutdown', message: `cut off after ${graceMs} ms` }]
        : err instanceof Snooze
          ? ['snoozed', { error: 'Snooze', message: err.message, snooze: err.seconds }]
          : err instanceof Fatal
            ? ['fatal', { error: err.name, message: err.message }]
            : ['failed', { error: err.name, message: err.message, traceback: err.stack }];
  }
  held.delete(job.id);
  const { rows: [decided] } = await db.query(SQL.COMPLETE,
    [workerId, [job.id], [job.lease], [outcome], JSON.stringify([details])]);
  log(decided?.status ?? 'refused', job);  // what SQL decided; refused: the lease was not ours
}

async function release() {
  const jobs = [...held.values()];
  held.clear();
  if (jobs.length === 0) return;
  const { rows } = await db.query(SQL.RELEASE,
    [workerId, jobs.map((j) => j.id), jobs.map((j) => j.lease)]);
  const byId = new Map(jobs.map((job) => [job.id, job]));
  for (const { id, status } of rows) log(status === 'queued' ? 'released' : status, byId.get(id));
}

// Idle: until a notification, the next delayed job (pgq.next_run_at) or the poll interval.
async function idle() {
  if (woken || stopping) return;
  const { rows: [{ ms }] } = await db.query(SQL.NEXT_DUE_MS, [entrypoints]);
  let timer;
  await new Promise((resolve) => {
    wakeUp = resolve;
    timer = setTimeout(resolve, Math.max(0, Math.min(pollMs, ms ?? Infinity)));
  });
  clearTimeout(timer);
}

await db.connect();
await listener.connect();
listener.on('notification', ({ payload }) => {
  const event = JSON.parse(payload);
  // enqueued: jobs due now; scheduled: jobs due later (the idle wait asks pgq.next_run_at again)
  const ours = event.entrypoints?.some((e) => entrypoints.includes(e));
  if (ours && ['enqueued', 'scheduled'].includes(event.kind)) wake();
  if (event.kind === 'cancel') beat();  // the heartbeat answers which of ours to stop
});
await listener.query(SQL.LISTEN);
const { rows: [registered] } = await db.query(SQL.REGISTER, [workerId, entrypoints]);
idleBeatMs = registered.interval_s * 1000;
scheduleBeat();
// Upkeep every 5 s (node-postgres runs one query at a time per client: this waits its turn).
const upkeep = () => db.query(SQL.MAINTAIN).catch((err) => console.error(`maintain failed: ${err.message}`));
await upkeep();
const upkeepTimer = setInterval(upkeep, 5000);
log(`ready worker=${workerId} entrypoints=${entrypoints.join(',')}`);

while (!stopping) {
  woken = false;
  const { rows } = await db.query(SQL.CLAIM, [workerId, entrypoints, batchSize]);
  const claimedAt = Date.now();
  const jobs = rows.map((row) => ({
    ...row,
    stop: new AbortController(),
    deadline: row.run_timeout_s == null ? null : claimedAt + row.run_timeout_s * 1000,
  }));
  for (const job of jobs) {
    if (job.taken_over?.error === 'heartbeat timeout') {
      const t = job.taken_over;
      log(`taken_over from=${t.worker_id} silent_since=${t.heartbeat_at} previous_attempt=${t.attempt}`, job);
    }
  }
  for (const job of jobs) held.set(job.id, job);
  if (jobs.length) scheduleBeat();  // idle, the idle beat already runs on its own interval
  for (const job of jobs) {
    if (stopping) break;
    await runJob(job);
  }
  await release();  // the claimed jobs a stop left unstarted
  if (rows.length === 0) await idle();
}
clearTimeout(beatTimer);
clearInterval(upkeepTimer);
await db.query(SQL.UNREGISTER, [workerId]);
await Promise.all([db.end(), listener.end()]);
log('stopped');
