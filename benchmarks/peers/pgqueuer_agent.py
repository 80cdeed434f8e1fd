"""PgQueuer side of the benchmarks. Runs in .venv-bench (see benchmarks/setup_peers.sh), never in
the pgq-thin environment. Uses PgQueuer's own public API only. Prints one JSON line at the end.

  drain    --dsn D --driver asyncpg|psycopg --batch B --timeout S
           [--wait --max-jobs M --skip K]: started on an idle queue, runs until M jobs were
           handled; its first start is that of job K + 1 (drain.py --burst)
  enqueue  --dsn D --driver asyncpg|psycopg --jobs N --batch B
  latency-worker   --dsn D --driver asyncpg|psycopg --jobs N --timeout S
  latency-producer --dsn D --driver asyncpg|psycopg --jobs N --interval-ms MS
  steady-worker    --dsn D --driver asyncpg|psycopg --jobs N --batch B --timeout S
  steady-producer  --dsn D --driver asyncpg|psycopg --rates R1,R2 --seconds S --tick-ms T
  horizon-producer --dsn D --schedule R:S,R:S --start-ns T   (held_horizon.py)
  horizon-worker   --dsn D --schedule R:S,R:S --start-ns T --until-ns U   QueueManager.run()
  scale-worker     --dsn D --driver asyncpg|psycopg --batch B --handler-ms H --timeout S
                   QueueManager.run(batch_size=B), a handler sleeping H ms, until stdin closes
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

from pgqueuer import AsyncpgDriver, PsycopgDriver, Queries, QueueManager
from pgqueuer.domain.types import QueueExecutionMode

# The bounded histogram of the harness (benchmarks/common.py; needs only psycopg, present here)
# and the producer grid shared with thin_agent.py (benchmarks/grid.py, standard library only).
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import grid
from common import LogHistogram, ScaleRecorder, stop_on_eof

ENTRYPOINT = "noop"


async def connect(dsn: str, driver: str) -> tuple[Any, Any]:
    if driver == "asyncpg":
        import asyncpg

        conn = await asyncpg.connect(dsn)
        return conn, AsyncpgDriver(conn)
    import psycopg

    conn = await psycopg.AsyncConnection.connect(dsn, autocommit=True)
    return conn, PsycopgDriver(conn)


async def drain(args: argparse.Namespace) -> dict[str, Any]:
    conn, drv = await connect(args.dsn, args.driver)
    qm = QueueManager(Queries(drv))
    state = {"first": 0, "last": 0, "n": 0}

    @qm.entrypoint(ENTRYPOINT)
    async def noop(job: Any) -> None:
        now = time.time_ns()
        state["n"] += 1
        if not state["first"] and state["n"] > args.skip:
            state["first"] = now
        state["last"] = now
        if args.max_jobs and state["n"] >= args.max_jobs:
            qm.shutdown.set()

    await asyncio.wait_for(
        qm.run(
            batch_size=args.batch,
            mode=QueueExecutionMode.continuous if args.wait else QueueExecutionMode.drain,
            dequeue_timeout=timedelta(seconds=1),
        ),
        args.timeout,
    )
    end = time.time_ns()
    await conn.close()
    return {
        "first_start_ns": state["first"],
        "last_handler_ns": state["last"],
        "run_end_ns": end,
        "handled": state["n"],
    }


async def enqueue(args: argparse.Namespace) -> dict[str, Any]:
    conn, drv = await connect(args.dsn, args.driver)
    q = Queries(drv)
    done = 0
    t0 = time.perf_counter()
    while done < args.jobs:
        n = min(args.batch, args.jobs - done)
        if n == 1 and args.batch == 1:
            await q.enqueue(ENTRYPOINT, None, 0)
        else:
            await q.enqueue([ENTRYPOINT] * n, [None] * n, [0] * n)
        done += n
    elapsed = time.perf_counter() - t0
    await conn.close()
    return {"jobs": done, "seconds": elapsed}


async def latency_worker(args: argparse.Namespace) -> dict[str, Any]:
    conn, drv = await connect(args.dsn, args.driver)
    qm = QueueManager(Queries(drv))
    lat_ns: list[int] = []

    @qm.entrypoint(ENTRYPOINT)
    async def record(job: Any) -> None:
        lat_ns.append(time.time_ns() - int(job.payload))
        if len(lat_ns) >= args.jobs:
            qm.shutdown.set()

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(qm.run(batch_size=args.batch), args.timeout)
    await conn.close()
    return {"latencies_ns": lat_ns}


async def latency_producer(args: argparse.Namespace) -> dict[str, Any]:
    conn, drv = await connect(args.dsn, args.driver)
    q = Queries(drv)
    interval = args.interval_ms / 1000.0
    start = time.perf_counter()
    for i in range(args.jobs):
        # Sleep until this job's slot (a fixed offered rate, not "interval after the last").
        delay = start + i * interval - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)
        await q.enqueue(ENTRYPOINT, str(time.time_ns()).encode(), 0)
    await conn.close()
    return {"jobs": args.jobs, "seconds": time.perf_counter() - start}


async def steady_worker(args: argparse.Namespace) -> dict[str, Any]:
    conn, drv = await connect(args.dsn, args.driver)
    qm = QueueManager(Queries(drv))
    hists: dict[int, LogHistogram] = {}
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    state = {"n": 0}

    @qm.entrypoint(ENTRYPOINT)
    async def record(job: Any) -> None:
        now = time.time_ns()
        d = json.loads(job.payload)
        p = int(d["p"])
        if p not in hists:
            hists[p] = LogHistogram()
            first[p] = now
        hists[p].record((now - int(d["t"])) / 1000.0)
        last[p] = now
        state["n"] += 1
        if state["n"] >= args.jobs:
            qm.shutdown.set()

    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(qm.run(batch_size=args.batch), args.timeout)
    await conn.close()
    return {
        "handled": state["n"],
        "phases": {
            str(p): {"hist": h.to_dict(), "first_ns": first[p], "last_ns": last[p]}
            for p, h in hists.items()
        },
    }


async def steady_producer(args: argparse.Namespace) -> dict[str, Any]:
    """Same grid as thin_agent.py steady-producer (benchmarks/grid.py): every tick, one
    batched Queries.enqueue call with every job due by now."""
    conn, drv = await connect(args.dsn, args.driver)
    q = Queries(drv)
    g = grid.Grid(
        grid.phases_arg(args.rates, args.seconds), args.tick_ms, args.max_batch, args.pause
    )
    async for p, k in g.asteps():
        t = time.time_ns()
        body = json.dumps({"t": t, "p": p}).encode()
        await q.enqueue([ENTRYPOINT] * k, [body] * k, [0] * k)
        g.sent(p, k, time.time_ns() - t)
    await conn.close()
    return {"phases": g.report()}


async def horizon_producer(args: argparse.Namespace) -> dict[str, Any]:
    """held_horizon.py: the schedule "rate:seconds,..." back to back from --start-ns."""
    conn, drv = await connect(args.dsn, args.driver)
    q = Queries(drv)
    g = grid.Grid(
        grid.schedule_arg(args.schedule), args.tick_ms, args.max_batch, 0.0, args.start_ns
    )
    async for p, k in g.asteps():
        t = time.time_ns()
        body = json.dumps({"t": t, "p": p}).encode()
        await q.enqueue([ENTRYPOINT] * k, [body] * k, [0] * k)
        g.sent(p, k, time.time_ns() - t)
    await conn.close()
    return {"phases": g.report()}


async def horizon_worker(args: argparse.Namespace) -> dict[str, Any]:
    """held_horizon.py: QueueManager.run() with its defaults (batch 10, no concurrency cap)
    until --until-ns; pickup latency measured exactly as in thin_agent.py horizon-worker."""
    conn, drv = await connect(args.dsn, args.driver)
    qm = QueueManager(Queries(drv))
    rec = grid.PickupRecorder(grid.schedule_arg(args.schedule), args.start_ns, args.grace)

    @qm.entrypoint(ENTRYPOINT)
    async def record(job: Any) -> None:
        now = time.time_ns()
        d = json.loads(job.payload)
        rec.record(job.id, int(d["p"]), int(d["t"]), now)

    delay = max(0.0, (args.until_ns - time.time_ns()) / 1e9)
    asyncio.get_running_loop().call_later(delay, qm.shutdown.set)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(qm.run(), delay + 120)
    await conn.close()
    return rec.report()


async def scale_worker(args: argparse.Namespace) -> dict[str, Any]:
    """benchmarks/scale_out.py: one of N worker processes, measured as thin_agent.py's."""
    conn, drv = await connect(args.dsn, args.driver)
    qm = QueueManager(Queries(drv))
    rec = ScaleRecorder()
    pause = args.handler_ms / 1000.0

    @qm.entrypoint(ENTRYPOINT)
    async def work(job: Any) -> None:
        rec.start(int(json.loads(job.payload)["t"]))
        await asyncio.sleep(pause)
        rec.end()

    stop_on_eof(asyncio.get_running_loop(), qm.shutdown.set)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(qm.run(batch_size=args.batch), args.timeout)
    await conn.close()
    return rec.report()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument(
        "command",
        choices=[
            "drain",
            "enqueue",
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
    p.add_argument("--driver", choices=["asyncpg", "psycopg"], default="asyncpg")
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--jobs", type=int, default=1000)
    p.add_argument("--wait", action="store_true", help="drain: keep polling when empty")
    p.add_argument("--max-jobs", type=int, default=0, help="drain: stop after this many")
    p.add_argument("--skip", type=int, default=0, help="drain: first start after K jobs")
    p.add_argument("--interval-ms", type=float, default=20.0)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--rates", default="500,2000,5000")
    p.add_argument("--seconds", type=float, default=20.0)
    p.add_argument("--tick-ms", type=float, default=10.0)
    p.add_argument("--max-batch", type=int, default=1000)
    p.add_argument("--pause", type=float, default=2.0)
    p.add_argument("--schedule", default="2000:30", help="rate:seconds,... (horizon-*)")
    p.add_argument("--start-ns", type=int, default=None, help="horizon-*: wall clock start")
    p.add_argument("--until-ns", type=int, default=0, help="horizon-worker: stop then")
    p.add_argument("--handler-ms", type=float, default=10.0, help="scale-worker: handler time")
    p.add_argument("--grace", type=float, default=1.0, help="horizon-worker: in time = by end+G")
    args = p.parse_args()
    fn = {
        "drain": drain,
        "enqueue": enqueue,
        "latency-worker": latency_worker,
        "latency-producer": latency_producer,
        "steady-worker": steady_worker,
        "steady-producer": steady_producer,
        "horizon-producer": horizon_producer,
        "horizon-worker": horizon_worker,
        "scale-worker": scale_worker,
    }[args.command]
    result = asyncio.run(fn(args))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
