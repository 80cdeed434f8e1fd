"""pgq-thin side of the benchmarks, run as a separate process by drain.py, latency.py and
backlog.py (in the pgq-thin environment). Prints one JSON line at the end.

  drain-worker  --dsn D --batch B --concurrency C --timeout S
        ThinWorker (async no-op handler) until a claim finds nothing and nothing runs.
        --defaults: ThinWorker(dsn) with its defaults (--batch, --concurrency ignored).
  drain-sql     --dsn D --batch B [--pipeline] --timeout S
        The "thin client floor": a bare psycopg loop over the client's own statements
        (pgq_thin.calls.CLAIM / COMPLETE), no worker machinery. --pipeline sends
        complete(previous batch) and claim(next batch) in one round trip (two transactions).
  latency-worker   --dsn D --jobs N --timeout S   idle ThinWorker; records pickup latencies
        (--defaults: ThinWorker(dsn)).
  latency-producer --dsn D --jobs N --interval-ms MS   Queue.enqueue at a fixed offered rate.
  steady-worker   --dsn D --jobs N --batch B --concurrency C --timeout S
        ThinWorker; records pickup latency per phase (payload "p") into a bounded histogram.
  steady-producer --dsn D --rates R1,R2 --seconds S --tick-ms T --pause P
        Queue.enqueue_many every tick-ms, so that each phase offers its rate for S seconds
        (the grid of benchmarks/grid.py).
  horizon-producer --dsn D --schedule R:S,R:S --start-ns T [--keys K] [--workflow W]   the same
                                                  grid, phases back to back (jobs given K group
                                                  keys in turn; W: each call's jobs as fan-outs of
                                                  W, one parent and W-1 children waiting for it)
  horizon-worker   --dsn D --schedule R:S,R:S --start-ns T --until-ns U
        ThinWorker(dsn) with its defaults; pickup latency per phase (held_horizon.py).
  scale-worker --dsn D --batch B --concurrency C --handler-ms H --timeout S
        ThinWorker whose handler sleeps H ms (asyncio); records pickup latency (payload "t")
        and the first start / last end; stops when its standard input is closed
        (benchmarks/scale_out.py runs several at once).
  drain-worker --seconds S stops the worker after S seconds even if jobs are left.
  drain-worker --wait --max-jobs M --skip K: a worker started on an idle queue, that runs until
  it has handled M jobs; its first start is that of job K + 1 (the burst of drain.py --burst).
  --maintain-interval S|off: pgq.maintain every S seconds (ThinWorker's maintain_interval;
  not given, the worker's own default).
  drain-worker --log-level L: the worker logs as `pgq-thin run --log-level L` does (stderr);
  --log-format json; --metrics: it also serves its Prometheus metrics (any free port).
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

from benchmarks import grid
from benchmarks.common import LogHistogram, ScaleRecorder, stop_on_eof
from pgq_thin import calls, logs
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

ENTRYPOINT = "noop"


def maintain_kw(args: argparse.Namespace) -> dict[str, float | None]:
    """--maintain-interval: seconds, or "off", as ThinWorker(maintain_interval=...); not given,
    the worker keeps its own default."""
    if args.maintain_interval is None:
        return {}
    off = args.maintain_interval == "off"
    return {"maintain_interval": None if off else float(args.maintain_interval)}


def drain_worker(args: argparse.Namespace) -> dict[str, Any]:
    if args.log_level:
        logs.configure(args.log_level.upper(), args.log_format)
    if args.defaults:  # out of the box: nothing tuned
        worker = ThinWorker(
            args.dsn,
            results_connection=args.results_connection,
            metrics_port=0 if args.metrics else None,
        )
    else:
        worker = ThinWorker(
            args.dsn,
            concurrency=args.concurrency,
            batch_size=args.batch,
            poll_interval=1.0,
            flush_size=args.flush_size,
            listen=not args.no_listen,
            **maintain_kw(args),
            results_connection=args.results_connection,
            metrics_port=0 if args.metrics else None,
        )
    state = {"first": 0, "last": 0, "n": 0}

    @worker.entrypoint(ENTRYPOINT)
    async def noop(job: Any) -> None:
        now = time.time_ns()
        state["n"] += 1
        if not state["first"] and state["n"] > args.skip:
            state["first"] = now
        state["last"] = now
        if args.max_jobs and state["n"] >= args.max_jobs:
            worker.stop()

    async def main() -> None:
        if args.seconds:
            asyncio.get_running_loop().call_later(args.seconds, worker.stop)
        await asyncio.wait_for(
            worker.arun(until_empty=not args.wait, install_signal_handlers=False), args.timeout
        )

    asyncio.run(main())
    return {
        "first_start_ns": state["first"],
        "last_handler_ns": state["last"],
        "run_end_ns": time.time_ns(),
        "handled": state["n"],
        "successful": worker.stats.successful,
    }


def idle_worker(args: argparse.Namespace) -> dict[str, Any]:
    """A ThinWorker with its defaults and nothing to run (entrypoint "idle"), for --seconds: only
    its polls and background loops work (pgq.maintain every --maintain-interval)."""
    worker = ThinWorker(args.dsn, **maintain_kw(args))

    @worker.entrypoint("idle")
    async def idle(job: Any) -> None:
        pass

    async def main() -> None:
        asyncio.get_running_loop().call_later(args.seconds, worker.stop)
        await asyncio.wait_for(worker.arun(install_signal_handlers=False), args.timeout)

    asyncio.run(main())
    return {"seconds": args.seconds}


def drain_sql(args: argparse.Namespace) -> dict[str, Any]:
    wid = uuid.uuid4()
    eps = [ENTRYPOINT]
    n = 0
    deadline = time.monotonic() + args.timeout
    with psycopg.connect(args.dsn, autocommit=True) as conn:
        first = time.time_ns()
        if not args.pipeline:
            while time.monotonic() < deadline and not (args.max_jobs and n >= args.max_jobs):
                rows = conn.execute(calls.CLAIM, (wid, eps, args.batch, None)).fetchall()
                if not rows:
                    break
                ids = [r[0] for r in rows]
                leases = [r[1] for r in rows]
                conn.execute(
                    calls.COMPLETE, calls.complete_args(wid, ids, leases, ["successful"] * len(ids))
                ).fetchall()
                n += len(ids)
        else:
            rows = conn.execute(calls.CLAIM, (wid, eps, args.batch, None)).fetchall()
            while rows and time.monotonic() < deadline:
                if args.max_jobs and n + len(rows) >= args.max_jobs:
                    break
                ids = [r[0] for r in rows]
                leases = [r[1] for r in rows]
                with conn.pipeline():
                    done = conn.execute(
                        calls.COMPLETE,
                        calls.complete_args(wid, ids, leases, ["successful"] * len(ids)),
                    )
                    nxt = conn.execute(calls.CLAIM, (wid, eps, args.batch, None))
                done.fetchall()
                rows = nxt.fetchall()
                n += len(ids)
            if rows:  # the last batch claimed: complete it too
                ids = [r[0] for r in rows]
                leases = [r[1] for r in rows]
                conn.execute(
                    calls.COMPLETE,
                    calls.complete_args(wid, ids, leases, ["successful"] * len(ids)),
                ).fetchall()
                n += len(ids)
    return {"first_start_ns": first, "run_end_ns": time.time_ns(), "handled": n}


def latency_worker(args: argparse.Namespace) -> dict[str, Any]:
    if args.defaults:  # out of the box: nothing tuned
        worker = ThinWorker(args.dsn)
    else:
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


def steady_worker(args: argparse.Namespace) -> dict[str, Any]:
    worker = ThinWorker(
        args.dsn,
        concurrency=args.concurrency,
        batch_size=args.batch,
        poll_interval=args.poll_interval,
        **maintain_kw(args),
    )
    hists: dict[int, LogHistogram] = {}
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    state = {"n": 0}

    @worker.entrypoint(ENTRYPOINT)
    async def record(job: Any) -> None:
        now = time.time_ns()
        p = int(job.payload["p"])
        if p not in hists:
            hists[p] = LogHistogram()
            first[p] = now
        hists[p].record((now - int(job.payload["t"])) / 1000.0)
        last[p] = now
        state["n"] += 1
        if state["n"] >= args.jobs:
            worker.stop()

    async def main() -> None:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(worker.arun(install_signal_handlers=False), args.timeout)

    asyncio.run(main())
    return {
        "handled": state["n"],
        "phases": {
            str(p): {"hist": h.to_dict(), "first_ns": first[p], "last_ns": last[p]}
            for p, h in hists.items()
        },
    }


def steady_producer(args: argparse.Namespace) -> dict[str, Any]:
    """Offered rate on a fixed tick grid (benchmarks/grid.py): at every tick, enqueue (in one
    enqueue_many call) every job that is due by now; a late tick catches up."""
    g = grid.Grid(
        grid.phases_arg(args.rates, args.seconds), args.tick_ms, args.max_batch, args.pause
    )
    with Queue(args.dsn) as q:
        q.connection.execute("SELECT 1")  # connect before the clock starts
        for p, k in g.steps():
            t = time.time_ns()
            q.enqueue_many(ENTRYPOINT, [{"t": t, "p": p}] * k)
            g.sent(p, k, time.time_ns() - t)
    return {"phases": g.report()}


def scale_worker(args: argparse.Namespace) -> dict[str, Any]:
    """benchmarks/scale_out.py: one of N worker processes; a handler of --handler-ms (asyncio
    sleep); runs until its standard input is closed."""
    worker = ThinWorker(
        args.dsn,
        concurrency=args.concurrency,
        batch_size=args.batch,
        **maintain_kw(args),
    )
    rec = ScaleRecorder()
    pause = args.handler_ms / 1000.0

    @worker.entrypoint(ENTRYPOINT)
    async def work(job: Any) -> None:
        rec.start(int(job.payload["t"]))
        await asyncio.sleep(pause)
        rec.end()

    async def run() -> None:
        stop_on_eof(asyncio.get_running_loop(), worker.stop)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(worker.arun(install_signal_handlers=False), args.timeout)

    asyncio.run(run())
    return rec.report()


def horizon_producer(args: argparse.Namespace) -> dict[str, Any]:
    """held_horizon.py: the schedule "rate:seconds,..." back to back from --start-ns."""
    g = grid.Grid(
        grid.schedule_arg(args.schedule), args.tick_ms, args.max_batch, 0.0, args.start_ns
    )
    n = 0
    with Queue(args.dsn) as q:
        q.connection.execute("SELECT 1")
        for p, k in g.steps():
            t = time.time_ns()
            keys = [f"key-{(n + i) % args.keys}" for i in range(k)] if args.keys else None
            w = args.workflow
            # Fan-outs of w jobs: the first of each w waits for nothing, the others for it.
            deps = [None if i % w == 0 else [i - i % w + 1] for i in range(k)] if w else None
            q.enqueue_many(ENTRYPOINT, [{"t": t, "p": p}] * k, group_keys=keys, depends_on=deps)
            g.sent(p, k, time.time_ns() - t)
            n += k
    return {"phases": g.report()}


def horizon_worker(args: argparse.Namespace) -> dict[str, Any]:
    """held_horizon.py: ThinWorker(dsn) with its defaults (nothing tuned; --results-connection:
    results_connection=True; --maintain-interval: its maintain_interval) until --until-ns. Pickup
    latency = handler start - the producer's clock just before the enqueue call."""
    worker = ThinWorker(args.dsn, results_connection=args.results_connection, **maintain_kw(args))
    rec = grid.PickupRecorder(grid.schedule_arg(args.schedule), args.start_ns, args.grace)

    @worker.entrypoint(ENTRYPOINT)
    async def record(job: Any) -> None:
        rec.record(job.id, int(job.payload["p"]), int(job.payload["t"]), time.time_ns())

    async def run() -> None:
        delay = max(0.0, (args.until_ns - time.time_ns()) / 1e9)
        asyncio.get_running_loop().call_later(delay, worker.stop)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(worker.arun(install_signal_handlers=False), delay + 120)

    asyncio.run(run())
    return rec.report()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument(
        "command",
        choices=[
            "drain-worker",
            "idle-worker",
            "drain-sql",
            "latency-worker",
            "latency-producer",
            "steady-worker",
            "steady-producer",
            "horizon-producer",
            "horizon-worker",
            "scale-worker",
        ],
    )
    p.add_argument("--dsn", required=True)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--concurrency", type=int, default=100)
    p.add_argument("--flush-size", type=int, default=None)
    p.add_argument("--defaults", action="store_true", help="drain-/latency-worker: ThinWorker(dsn)")
    p.add_argument("--no-listen", action="store_true")
    p.add_argument("--pipeline", action="store_true")
    p.add_argument(
        "--results-connection",
        action="store_true",
        help="drain-worker, horizon-worker: ThinWorker(results_connection=True)",
    )
    p.add_argument("--max-jobs", type=int, default=0, help="stop after this many (0: drain)")
    p.add_argument("--wait", action="store_true", help="drain-worker: keep polling when empty")
    p.add_argument("--skip", type=int, default=0, help="drain-worker: first start after K jobs")
    p.add_argument("--poll-interval", type=float, default=5.0)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--interval-ms", type=float, default=20.0)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--seconds", type=float, default=0.0, help="drain-worker: stop after S s")
    p.add_argument("--rates", default="500,2000,5000")
    p.add_argument("--tick-ms", type=float, default=10.0)
    p.add_argument("--max-batch", type=int, default=1000)
    p.add_argument("--pause", type=float, default=2.0)
    p.add_argument("--schedule", default="2000:30", help="rate:seconds,... (horizon-*)")
    p.add_argument("--start-ns", type=int, default=None, help="horizon-*: wall clock start")
    p.add_argument("--until-ns", type=int, default=0, help="horizon-worker: stop then")
    p.add_argument("--handler-ms", type=float, default=10.0, help="scale-worker: handler time")
    p.add_argument("--grace", type=float, default=1.0, help="horizon-worker: in time = by end+G")
    p.add_argument("--keys", type=int, default=0, help="horizon-producer: group keys in turn")
    p.add_argument(
        "--workflow", type=int, default=0, help="horizon-producer: fan-outs of W jobs (1 + W-1)"
    )
    p.add_argument(
        "--maintain-interval",
        default=None,
        help="seconds, or off (default: ThinWorker's own default)",
    )
    p.add_argument("--log-level", default=None, help="drain-worker: configure logging")
    p.add_argument("--log-format", default="text", choices=logs.FORMATS)
    p.add_argument("--metrics", action="store_true", help="drain-worker: serve metrics")
    args = p.parse_args()
    if args.command == "steady-producer":
        args.seconds = args.seconds or 20.0
    fn = {
        "drain-worker": drain_worker,
        "idle-worker": idle_worker,
        "drain-sql": drain_sql,
        "latency-worker": latency_worker,
        "latency-producer": latency_producer,
        "steady-worker": steady_worker,
        "steady-producer": steady_producer,
        "horizon-producer": horizon_producer,
        "horizon-worker": horizon_worker,
        "scale-worker": scale_worker,
    }[args.command]
    print(json.dumps(fn(args)))


if __name__ == "__main__":
    main()
