"""pgq-thin side of the benchmarks, run as a separate process by drain.py, latency.py and
backlog.py (in the pgq-thin environment). Prints one JSON line at the end.

  drain-worker  --dsn D --batch B --concurrency C --timeout S
        ThinWorker (async no-op handler) until a claim finds nothing and nothing runs.
  drain-sql     --dsn D --batch B [--pipeline] --timeout S
        The "thin client floor": a bare psycopg loop over the client's own statements
        (pgq_thin.calls.CLAIM / COMPLETE), no worker machinery. --pipeline sends
        complete(previous batch) and claim(next batch) in one round trip (two transactions).
  latency-worker   --dsn D --jobs N --timeout S   idle ThinWorker; records pickup latencies.
  latency-producer --dsn D --jobs N --interval-ms MS   Queue.enqueue at a fixed offered rate.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import contextlib

import psycopg

from pgq_thin import calls
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

ENTRYPOINT = "noop"


def drain_worker(args: argparse.Namespace) -> dict[str, Any]:
    worker = ThinWorker(
        args.dsn,
        concurrency=args.concurrency,
        batch_size=args.batch,
        poll_interval=1.0,
        flush_size=args.flush_size,
        listen=not args.no_listen,
    )
    state = {"first": 0, "last": 0, "n": 0}

    @worker.entrypoint(ENTRYPOINT)
    async def noop(job: Any) -> None:
        now = time.time_ns()
        if not state["first"]:
            state["first"] = now
        state["last"] = now
        state["n"] += 1
        if args.max_jobs and state["n"] >= args.max_jobs:
            worker.stop()

    async def main() -> None:
        await asyncio.wait_for(
            worker.arun(until_empty=True, install_signal_handlers=False), args.timeout
        )

    asyncio.run(main())
    return {
        "first_start_ns": state["first"],
        "last_handler_ns": state["last"],
        "run_end_ns": time.time_ns(),
        "handled": state["n"],
        "successful": worker.stats.successful,
    }


def drain_sql(args: argparse.Namespace) -> dict[str, Any]:
    wid = uuid.uuid4()
    eps = [ENTRYPOINT]
    n = 0
    deadline = time.monotonic() + args.timeout
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        first = time.time_ns()
        if not args.pipeline:
            while time.monotonic() < deadline and not (args.max_jobs and n >= args.max_jobs):
                rows = conn.execute(calls.CLAIM, (wid, eps, args.batch)).fetchall()
                if not rows:
                    break
                ids = [r[0] for r in rows]
                leases = [r[1] for r in rows]
                conn.execute(
                    calls.COMPLETE, (wid, ids, leases, ["successful"] * len(ids), [None] * len(ids))
                ).fetchall()
                n += len(ids)
        else:
            rows = conn.execute(calls.CLAIM, (wid, eps, args.batch)).fetchall()
            while rows and time.monotonic() < deadline:
                if args.max_jobs and n + len(rows) >= args.max_jobs:
                    break
                ids = [r[0] for r in rows]
                leases = [r[1] for r in rows]
                with conn.pipeline():
                    done = conn.execute(
                        calls.COMPLETE,
                        (wid, ids, leases, ["successful"] * len(ids), [None] * len(ids)),
                    )
                    nxt = conn.execute(calls.CLAIM, (wid, eps, args.batch))
                done.fetchall()
                rows = nxt.fetchall()
                n += len(ids)
            if rows:  # the last batch claimed: complete it too
                ids = [r[0] for r in rows]
                leases = [r[1] for r in rows]
                conn.execute(
                    calls.COMPLETE,
                    (wid, ids, leases, ["successful"] * len(ids), [None] * len(ids)),
                ).fetchall()
                n += len(ids)
    return {"first_start_ns": first, "run_end_ns": time.time_ns(), "handled": n}


def latency_worker(args: argparse.Namespace) -> dict[str, Any]:
    worker = ThinWorker(
        args.dsn,
        concurrency=args.concurrency,
        batch_size=args.batch,
        poll_interval=args.poll_interval,
    )
    lat_ns: list[int] = []

    @worker.entrypoint(ENTRYPOINT)
    async def record(job: Any) -> None:
        lat_ns.append(time.time_ns() - int(job.payload["t"]))
        if len(lat_ns) >= args.jobs:
            worker.stop()

    async def main() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(worker.arun(install_signal_handlers=False), args.timeout)

    asyncio.run(main())
    return {"latencies_ns": lat_ns}


def latency_producer(args: argparse.Namespace) -> dict[str, Any]:
    interval = args.interval_ms / 1000.0
    with Queue(args.dsn) as q:
        start = time.perf_counter()
        for i in range(args.jobs):
            delay = start + i * interval - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            q.enqueue(ENTRYPOINT, {"t": time.time_ns()})
        elapsed = time.perf_counter() - start
    return {"jobs": args.jobs, "seconds": elapsed}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument(
        "command", choices=["drain-worker", "drain-sql", "latency-worker", "latency-producer"]
    )
    p.add_argument("--dsn", required=True)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--flush-size", type=int, default=None)
    p.add_argument("--no-listen", action="store_true")
    p.add_argument("--pipeline", action="store_true")
    p.add_argument("--max-jobs", type=int, default=0, help="stop after this many (0: drain)")
    p.add_argument("--poll-interval", type=float, default=5.0)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--interval-ms", type=float, default=20.0)
    p.add_argument("--timeout", type=float, default=600.0)
    args = p.parse_args()
    fn = {
        "drain-worker": drain_worker,
        "drain-sql": drain_sql,
        "latency-worker": latency_worker,
        "latency-producer": latency_producer,
    }[args.command]
    print(json.dumps(fn(args)))


if __name__ == "__main__":
    main()
