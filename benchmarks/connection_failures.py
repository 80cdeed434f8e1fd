"""What a pgq-thin worker does when its connections drop: the experiment behind
docs/connection-failures.md.

Usage: python benchmarks/connection_failures.py [--dsn DSN] [--churn-seconds 60]
           [--rows direct,schedule,pgbouncer,restart,outage5,failover-any,failover-rw,sigkill,churn]

Each row gets a fresh scratch database (the restart row a PostgreSQL server of its own in a temp
folder, never the server of --dsn) and one worker process (``worker`` mode of this script:
concurrency 30, poll interval 30 s so that only NOTIFY or the worker's own recovery can explain
a fast pickup, heartbeat timeout 4 s). Its handler appends ``start``/``end`` lines (job id,
attempt, time) to a log file: the ground truth for how often each job ran.

Per row: 10 slow jobs (3 s) are started, then 10 quick jobs run and end; right after the last
quick one ends (its result probably still buffered) the fault hits:

* direct / schedule / pgbouncer: every backend of the worker is killed with
  ``pg_terminate_backend`` (behind PgBouncer in transaction mode: the pooler's server backends
  and the worker's direct LISTEN connection);
* restart: the server is restarted (``pg_ctl restart -m fast``);
* outage5: the server is stopped (``-m fast``) for 5 s, then started;
* failover-any / failover-rw: a primary and a streaming hot standby of their own (synchronous
  replication), the worker on a multi-host DSN (``host=127.0.0.1,127.0.0.1 port=P1,P2``) without
  ``target_session_attrs`` (libpq's ``any``) or with ``read-write``; the primary crashes
  (``pg_ctl stop -m immediate``) and is started again 1 s later;
* sigkill: the worker process gets SIGKILL and a second worker process (poll 1 s) is started.

Then 20 new quick jobs are enqueued at once. Measured: the time from the kill until the worker
starts a new job, new jobs processed, jobs run twice (finished before the kill / in flight at the
kill), jobs lost (not finished 20 s after the rest), and the pickup latency of one job enqueued
on the idle worker afterwards; for the outage and failover rows also the time from the server
accepting connections again until the worker starts a new job (the new jobs are enqueued as
soon as it accepts) (NOTIFY back: well under the 30 s poll). The churn row runs load
through PgBouncer for --churn-seconds while the pooler's server backends are killed every 0.5 s
and expire every 2 s, and counts jobs run twice and jobs lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from datetime import timedelta
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "py"))

import common
import psycopg
from helpers import faults
from psycopg.conninfo import conninfo_to_dict, make_conninfo

HEARTBEAT_TIMEOUT = 4.0
POLL = 30.0
SIGKILL_POLL = 1.0
SLOW, QUICK, NEW = 10, 10, 20
SLOW_SECONDS = 3.0
WORKER_APP = "pgq-cf-worker"
PRODUCER_APP = "pgq-cf-producer"


# --- the worker process -------------------------------------------------------------------------


def worker_main(args: argparse.Namespace) -> None:
    import logging

    from pgq_thin import Job, ThinWorker

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(name)s: %(message)s")
    fd = os.open(args.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)

    def note(kind: str, job: Job[Any]) -> None:
        os.write(fd, f"{kind} {job.id} {job.attempt} {time.time():.6f}\n".encode())

    worker = ThinWorker(
        args.dsn,
        listen_dsn=args.listen_dsn,
        concurrency=30,
        batch_size=10,
        poll_interval=args.poll,
        grace_period=10,
    )

    @worker.entrypoint("cf.job")
    async def job(j: Job[Any]) -> None:
        note("start", j)
        await asyncio.sleep(float((j.payload or {}).get("sleep", 0)))
        note("end", j)

    if args.schedule:

        @worker.schedule("* * * * * *", "cf.tick")  # every second
        async def tick(j: Job[Any]) -> None:
            pass

    worker.run()
    print(json.dumps(vars(worker.stats)), flush=True)


# --- the controller -----------------------------------------------------------------------------


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True, application_name=PRODUCER_APP)


def enqueue(dsn: str, n: int, sleep: float, deadline: float = 30.0) -> list[int]:
    """Enqueue ``n`` jobs; while the server restarts, retry until it accepts."""
    from pgq_thin.queue import Queue

    end = time.monotonic() + deadline
    while True:
        try:
            with connect(dsn) as conn:
                return Queue(conn).enqueue_many("cf.job", [{"sleep": sleep}] * n)
        except psycopg.OperationalError:
            if time.monotonic() > end:
                raise
            time.sleep(0.01)


def read_log(path: Path) -> list[tuple[str, int, int, float]]:
    out = []
    for line in path.read_text().splitlines():
        kind, job_id, attempt, at = line.split()
        out.append((kind, int(job_id), int(attempt), float(at)))
    return out


def wait(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)


def finished(dsn: str, ids: list[int]) -> set[int]:
    with connect(dsn) as conn:
        rows = conn.execute(
            "SELECT id FROM pgq.job_history WHERE status = 'successful' AND id = ANY(%s)", (ids,)
        ).fetchall()
    return {r[0] for r in rows}


def worker_pids(dsn: str) -> list[int]:
    """Backends serving the worker: everything on its database but the producer and us."""
    dbname = str(conninfo_to_dict(dsn)["dbname"])
    with connect(dsn) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = "
            "'client backend' AND pid <> pg_backend_pid() AND application_name <> %s",
            (dbname, PRODUCER_APP),
        ).fetchall()
    return [r[0] for r in rows]


def spawn_worker(
    dsn: str, log: Path, *, listen_dsn: str | None, schedule: bool, poll: float
) -> subprocess.Popen[str]:
    command = [sys.executable, __file__, "worker", "--dsn", dsn, "--log", str(log)]
    command += ["--poll", str(poll)]
    if listen_dsn:
        command += ["--listen-dsn", listen_dsn]
    if schedule:
        command += ["--schedule"]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=common.ROOT
    )


def stop_worker(proc: subprocess.Popen[str]) -> dict[str, Any]:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        out, err = proc.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, err = proc.communicate()
    lines = [line for line in out.splitlines() if line.startswith("{")]
    stats: dict[str, Any] = json.loads(lines[-1]) if lines else {}
    stats["warnings"] = [line for line in err.splitlines() if "pgq_thin" in line][-8:]
    return stats


def prepare(dsn: str) -> None:
    from pgq_thin import migrate
    from pgq_thin.queue import Queue

    migrate.upgrade(dsn)
    with connect(dsn) as conn:
        Queue(conn).configure("cf.job", heartbeat_timeout=timedelta(seconds=HEARTBEAT_TIMEOUT))


def run_row(
    kind: str,
    dsn: str,
    *,
    bouncer_dsn: str | None = None,
    server: Any = None,
    pair: faults.Pair | None = None,
) -> dict:
    """One row of the table (see the module docstring)."""
    prepare(dsn)
    if kind.startswith("failover"):
        pair.wait_replayed()
    folder = Path(tempfile.mkdtemp(prefix="pgq-cf-"))
    log = folder / "runs.log"
    worker_dsn = make_conninfo(bouncer_dsn or dsn, application_name=WORKER_APP)
    if kind.startswith("failover"):
        attrs = {"target_session_attrs": "read-write"} if kind == "failover-rw" else {}
        worker_dsn = pair.dsn(str(conninfo_to_dict(dsn)["dbname"]), **attrs)
        worker_dsn = make_conninfo(worker_dsn, application_name=WORKER_APP)
    listen_dsn = make_conninfo(dsn, application_name=WORKER_APP) if bouncer_dsn else None
    proc = spawn_worker(
        worker_dsn, log, listen_dsn=listen_dsn, schedule=kind == "schedule", poll=POLL
    )
    second: subprocess.Popen[str] | None = None
    t_back: float | None = None
    try:
        warm = enqueue(dsn, 1, 0)  # the worker is up and listening once it ran this
        wait(lambda: finished(dsn, warm), 30, "the worker to start")
        slow = enqueue(dsn, SLOW, SLOW_SECONDS)
        wait(
            lambda: sum(k == "start" and i in slow for k, i, *_ in read_log(log)) == SLOW,
            10,
            "slow",
        )
        quick = enqueue(dsn, QUICK, 0.01)
        wait(
            lambda: sum(k == "end" and i in quick for k, i, *_ in read_log(log)) == QUICK,
            10,
            "quick",
        )

        last_beat: dict[int, Any] = {}
        t_kill = time.time()
        if kind == "sigkill":
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            with connect(dsn) as conn:
                last_beat = dict(
                    conn.execute(
                        "SELECT id, extract(epoch FROM heartbeat_at) FROM pgq.jobs "
                        "WHERE id = ANY(%s)",
                        (slow,),
                    ).fetchall()
                )
            second = spawn_worker(
                worker_dsn, log, listen_dsn=listen_dsn, schedule=False, poll=SIGKILL_POLL
            )
            killed = 1
        elif kind == "restart":
            server.restart()
            killed = -1
        elif kind == "outage5":
            server.stop("fast")
            time.sleep(5.0)
            server.start()  # -w: returns once the server accepts connections
            t_back = time.time()
            killed = -1
        elif kind.startswith("failover"):
            assert pair is not None
            pair.crash_primary()
            time.sleep(1.0)
            pair.primary.start()
            t_back = time.time()
            killed = -1
        else:
            killed = faults.terminate_backends(dsn, worker_pids(dsn))
        new = enqueue(dsn, NEW, 0.01)

        everything = slow + quick + new
        deadline = time.monotonic() + SLOW_SECONDS + 20
        while time.monotonic() < deadline and len(finished(dsn, everything)) < len(everything):
            time.sleep(0.05)
        runs = read_log(log)
        starts = Counter(i for k, i, *_ in runs if k == "start")
        new_starts = sorted(at for k, i, _a, at in runs if k == "start" and i in new)
        done = finished(dsn, everything)

        # NOTIFY after the recovery: one job on the idle worker (poll 30 s).
        t0 = time.time()
        probe = enqueue(dsn, 1, 0)
        try:
            wait(lambda: finished(dsn, probe), 40, "the probe job")
            probe_start: float | None = next(
                at for k, i, _a, at in read_log(log) if k == "start" and i == probe[0]
            )
        except TimeoutError:  # the worker never came back
            probe_start = None

        row: dict[str, Any] = {
            "row": kind,
            "backends_killed": killed,
            "resume_s": round(new_starts[0] - t_kill, 3) if new_starts else None,
            "new_processed": sum(i in done for i in new),
            "new_jobs": NEW,
            "twice_finished_before": sum(starts[i] > 1 for i in quick),
            "twice_in_flight": sum(starts[i] > 1 for i in slow),
            "lost": len(set(everything) - done),
            "pickup_after_s": None if probe_start is None else round(probe_start - t0, 3),
        }
        if t_back is not None:
            row["outage_s"] = round(t_back - t_kill, 2)
            row["resume_after_back_s"] = round(new_starts[0] - t_back, 3) if new_starts else None
        if kind == "sigkill":
            redelivered = {i: at for k, i, a, at in runs if k == "start" and i in slow and a == 2}
            after_beat = [redelivered[i] - float(last_beat[i]) for i in redelivered]
            row["redelivered"] = len(redelivered)
            row["redelivery_after_kill_s"] = (
                [
                    round(min(redelivered.values()) - t_kill, 2),
                    round(max(redelivered.values()) - t_kill, 2),
                ]
                if redelivered
                else None
            )
            row["redelivery_after_last_heartbeat_s"] = (
                [round(min(after_beat), 2), round(max(after_beat), 2)] if after_beat else None
            )
    finally:
        row_stats = stop_worker(second or proc)
        if second is not None and proc.poll() is None:
            proc.kill()
    row["worker_stats"] = row_stats
    return row


def churn_row(dsn: str, bouncer_dsn: str, seconds: float) -> dict[str, Any]:
    prepare(dsn)
    folder = Path(tempfile.mkdtemp(prefix="pgq-cf-"))
    log = folder / "runs.log"
    proc = spawn_worker(
        make_conninfo(bouncer_dsn, application_name=WORKER_APP),
        log,
        listen_dsn=make_conninfo(dsn, application_name=WORKER_APP),
        schedule=False,
        poll=POLL,
    )
    stop = threading.Event()
    kills: list[int] = []

    def churner() -> None:
        while not stop.wait(0.5):
            with connect(dsn) as conn:
                listener = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE query = 'LISTEN pgq_events'"
                ).fetchall()
            keep = {r[0] for r in listener}
            kills.append(
                faults.terminate_backends(dsn, [p for p in worker_pids(dsn) if p not in keep])
            )

    ids: list[int] = []
    thread = threading.Thread(target=churner, daemon=True)
    try:
        warm = enqueue(dsn, 1, 0)
        wait(lambda: finished(dsn, warm), 30, "the worker to start")
        thread.start()
        end = time.monotonic() + seconds
        while time.monotonic() < end:  # about 200 jobs/s of 10 ms each
            ids += enqueue(dsn, 50, 0.01)
            time.sleep(0.25)
        stop.set()
        thread.join()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(finished(dsn, ids)) < len(ids):
            time.sleep(0.1)
        done = finished(dsn, ids)
        starts = Counter(i for k, i, *_ in read_log(log) if k == "start")
    finally:
        stop.set()
        stats = stop_worker(proc)
    return {
        "row": "churn",
        "seconds": seconds,
        "jobs": len(ids),
        "server_backends_killed": sum(kills),
        "run_twice": sum(starts[i] > 1 for i in ids),
        "lost": len(set(ids) - done),
        "worker_stats": stats,
    }


@contextmanager
def bouncer_for(dsn: str) -> Iterator[str]:
    with faults.pgbouncer(dsn, settings={"server_lifetime": 2}) as b:
        yield b.dsn(str(conninfo_to_dict(dsn)["dbname"]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="mode")
    w = sub.add_parser("worker")
    w.add_argument("--dsn", required=True)
    w.add_argument("--listen-dsn", default=None)
    w.add_argument("--log", required=True)
    w.add_argument("--poll", type=float, default=POLL)
    w.add_argument("--schedule", action="store_true")
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--churn-seconds", type=float, default=60.0)
    parser.add_argument(
        "--rows",
        default="direct,schedule,pgbouncer,restart,outage5,failover-any,failover-rw,sigkill,churn",
    )
    args = parser.parse_args()
    if args.mode == "worker":
        worker_main(args)
        return

    common.check_local(args.dsn)
    wanted = args.rows.split(",")
    results: list[dict[str, Any]] = []
    for kind in wanted:
        print(f"--- {kind}", flush=True)
        if kind in ("restart", "outage5"):
            with faults.own_server() as server:
                row = run_row(kind, server.dsn(), server=server)
        elif kind.startswith("failover"):
            with faults.primary_and_standby(synchronous=True) as pair:
                row = run_row(kind, pair.primary.dsn(), pair=pair)
        elif kind == "churn":
            with common.scratch_db(args.dsn, "cf") as dsn, bouncer_for(dsn) as bdsn:
                row = churn_row(dsn, bdsn, args.churn_seconds)
        else:
            ctx = common.scratch_db(args.dsn, "cf")
            with ctx as dsn, bouncer_for(dsn) if kind == "pgbouncer" else nullcontext() as bdsn:
                row = run_row(kind, dsn, bouncer_dsn=bdsn)
        print(json.dumps(row, default=str), flush=True)
        results.append(row)

    headers = [
        "setup",
        "claims again after the kill",
        "new jobs processed",
        "run twice: finished before / in flight",
        "lost",
        "pickup after recovery (poll 30 s)",
        "outage",
        "starts a new job after the server is back",
    ]
    table_rows = [
        [
            r["row"],
            f"{r['resume_s']:.2f} s" if r.get("resume_s") is not None else "-",
            f"{r['new_processed']}/{r['new_jobs']}",
            f"{r['twice_finished_before']} / {r['twice_in_flight']}",
            r["lost"],
            f"{r['pickup_after_s'] * 1000:.0f} ms" if r["pickup_after_s"] is not None else "never",
            f"{r['outage_s']:.2f} s" if "outage_s" in r else "-",
            (
                "-"
                if "outage_s" not in r
                else f"{r['resume_after_back_s']:.2f} s"
                if r["resume_after_back_s"] is not None
                else "never (20 s)"
            ),
        ]
        for r in results
        if r["row"] != "churn"
    ]
    print(common.table(headers, table_rows))
    for r in results:
        if r["row"] == "sigkill":
            print(
                f"sigkill: {r['redelivered']}/{SLOW} re-delivered, "
                f"{r['redelivery_after_kill_s']} s after the kill, "
                f"{r['redelivery_after_last_heartbeat_s']} s after their last heartbeat "
                f"(heartbeat timeout {HEARTBEAT_TIMEOUT:g} s, poll {SIGKILL_POLL:g} s)"
            )
        if r["row"] == "churn":
            print(
                f"churn: {r['seconds']:g} s, {r['jobs']} jobs, {r['server_backends_killed']} "
                f"server backends killed, {r['run_twice']} run twice, {r['lost']} lost"
            )
    path = common.write_json(
        "connection_failures",
        {
            "server": common.server_info(args.dsn),
            "pgbouncer": faults.PgBouncer.version_of(),
            "heartbeat_timeout_s": HEARTBEAT_TIMEOUT,
            "poll_interval_s": POLL,
            "rows": results,
        },
    )
    print(f"wrote {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
