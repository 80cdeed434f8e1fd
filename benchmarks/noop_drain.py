"""Throughput of one ThinWorker on no-op jobs: enqueue N jobs, drain them, report jobs/s.

    python benchmarks/noop_drain.py [--dsn DSN] [--jobs 20000] [--concurrency 10,50,100]

Uses the configured database (``--dsn``, ``PGQ_DSN``, ``PG*``) or the embedded default. Each
run uses its own entrypoint name, so runs do not see each other's jobs. The timing covers the
worker only (claim, run, complete: every round trip), not the enqueue.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

from pgq_thin import migrate
from pgq_thin.connection import resolve_dsn
from pgq_thin.job import Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker


def one_run(dsn: str, jobs: int, concurrency: int, batch_size: int) -> float:
    entrypoint = f"bench.noop.{uuid.uuid4().hex[:8]}"
    with Queue(dsn) as queue:
        for start in range(0, jobs, 5000):
            queue.enqueue_many(entrypoint, [None] * min(5000, jobs - start))
    worker = ThinWorker(dsn, concurrency=concurrency, batch_size=batch_size, listen=False)

    @worker.entrypoint(entrypoint)
    async def noop(job: Job[Any]) -> None:
        pass

    started = time.perf_counter()
    asyncio.run(worker.arun(until_empty=True, install_signal_handlers=False))
    elapsed = time.perf_counter() - started
    assert worker.stats.successful == jobs, worker.stats
    return jobs / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dsn", default=None)
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--concurrency", default="10,50,100", help="comma-separated values")
    parser.add_argument("--batch-size", type=int, default=None, help="default: = concurrency")
    args = parser.parse_args()
    dsn = resolve_dsn(args.dsn)
    migrate.upgrade(dsn)
    print(f"{'concurrency':>11} {'batch':>6} {'jobs':>7} {'jobs/s':>8}")
    for c in (int(x) for x in args.concurrency.split(",")):
        batch = args.batch_size or c
        rate = one_run(dsn, args.jobs, c, batch)
        print(f"{c:>11} {batch:>6} {args.jobs:>7} {rate:>8.0f}", flush=True)


if __name__ == "__main__":
    main()
