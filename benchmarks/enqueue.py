"""Enqueue throughput: pgq-thin enqueue_many vs single enqueue calls, and PgQueuer, one run.

Usage: python benchmarks/enqueue.py [--dsn DSN] [--jobs 20000] [--single-jobs 5000]
                                    [--batch 1000] [--repeat 1]

Each measurement gets a fresh scratch database with an empty queue. Payloads are small JSON
objects for pgq-thin ({"n": i}) and no payload for PgQueuer (its payload is bytes; NULL is its
cheapest case). The clock runs around the enqueue calls only (connection already open).

  pgq-thin Queue.enqueue_many     batches of --batch, one call (one transaction) each
  pgq-thin Queue.enqueue          one call, one transaction per job
  pgq-thin enqueue pipelined      the client's pgq.enqueue statement via executemany (psycopg
                                  pipeline mode: one round trip, one implicit transaction)
  pgqueuer-<driver> batched       Queries.enqueue with lists of --batch
  pgqueuer-asyncpg single         Queries.enqueue one job per call
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import psycopg

from pgq_thin import calls
from pgq_thin.queue import Queue


def thin_many(db: str, jobs: int, batch: int) -> float:
    with Queue(db) as q:
        q.connection  # noqa: B018 - connect before the clock starts
        t0 = time.perf_counter()
        for start in range(0, jobs, batch):
            n = min(batch, jobs - start)
            q.enqueue_many("noop", [{"n": start + i} for i in range(n)])
        return time.perf_counter() - t0


def thin_single(db: str, jobs: int) -> float:
    with Queue(db) as q:
        q.connection  # noqa: B018
        t0 = time.perf_counter()
        for i in range(jobs):
            q.enqueue("noop", {"n": i})
        return time.perf_counter() - t0


def thin_pipelined(db: str, jobs: int, batch: int) -> float:
    with psycopg.connect(db, autocommit=True) as conn:
        t0 = time.perf_counter()
        with conn.cursor() as cur:
            for start in range(0, jobs, batch):
                n = min(batch, jobs - start)
                cur.executemany(
                    calls.ENQUEUE,
                    [
                        calls.enqueue_args("noop", {"n": start + i}, 0, None, None, None, "raise")
                        for i in range(n)
                    ],
                )
        return time.perf_counter() - t0


def peer(db: str, driver: str, jobs: int, batch: int) -> float:
    res = common.run_agents(
        [
            common.agent(
                "peer",
                "enqueue",
                "--dsn",
                db,
                "--driver",
                driver,
                "--jobs",
                str(jobs),
                "--batch",
                str(batch),
            )
        ],
        600,
    )
    return float(res[0]["seconds"])


def count(db: str, kind: str) -> int:
    q = "SELECT count(*) FROM pgq.jobs" if kind == "thin" else "SELECT count(*) FROM pgqueuer"
    with psycopg.connect(db) as conn:
        row = conn.execute(q).fetchone()
    return int(row[0]) if row else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--single-jobs", type=int, default=5_000)
    parser.add_argument("--batch", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    common.check_local(args.dsn)
    b, n, s = args.batch, args.jobs, args.single_jobs
    cases: list[tuple[str, str, str, int, Any]] = [
        ("pgq-thin Queue.enqueue_many", f"batch {b}", "thin", n, lambda db: thin_many(db, n, b)),
        ("pgq-thin Queue.enqueue", "1 per call", "thin", s, lambda db: thin_single(db, s)),
        (
            "pgq-thin pgq.enqueue pipelined",
            f"executemany x{b}",
            "thin",
            n,
            lambda db: thin_pipelined(db, n, b),
        ),
        ("pgqueuer-asyncpg", f"batch {b}", "peer", n, lambda db: peer(db, "asyncpg", n, b)),
        ("pgqueuer-psycopg", f"batch {b}", "peer", n, lambda db: peer(db, "psycopg", n, b)),
        ("pgqueuer-asyncpg", "1 per call", "peer", s, lambda db: peer(db, "asyncpg", s, 1)),
    ]
    results: dict[tuple[str, str], list[float]] = {(c[0], c[1]): [] for c in cases}
    for rnd in range(args.repeat):
        for system, setting, kind, jobs, fn in cases:
            with common.scratch_db(args.dsn, "enqueue") as db:
                if kind == "thin":
                    common.install_pgq(db)
                else:
                    common.install_pgqueuer(db)
                seconds = fn(db)
                got = count(db, kind)
            if got != jobs:
                raise RuntimeError(f"{system} {setting}: {got} jobs in the table, expected {jobs}")
            results[(system, setting)].append(jobs / seconds)
            print(
                f"  [{rnd + 1}/{args.repeat}] {system} {setting}: {jobs / seconds:,.0f} jobs/s",
                file=sys.stderr,
                flush=True,
            )
    med = {k: statistics.median(v) for k, v in results.items()}
    rows = [[sy, st, jobs, med[(sy, st)]] for sy, st, _, jobs, _ in cases]
    print(f"\nEnqueue throughput, median of {args.repeat} run(s)\n")
    print(common.table(["system", "setting", "jobs", "jobs/s"], rows))
    ours = med[("pgq-thin Queue.enqueue_many", f"batch {b}")]
    peer_best = max(
        med[("pgqueuer-asyncpg", f"batch {b}")], med[("pgqueuer-psycopg", f"batch {b}")]
    )
    ratios = {
        "enqueue_many/pgqueuer_batched_best": ours / peer_best,
        "enqueue_many/enqueue_single": ours / med[("pgq-thin Queue.enqueue", "1 per call")],
    }
    best = ratios["enqueue_many/pgqueuer_batched_best"]
    print(f"\nenqueue_many / PgQueuer best batched: {best:.2f}x")
    print(f"enqueue_many / single enqueue: {ratios['enqueue_many/enqueue_single']:.1f}x")
    path = common.write_json(
        "enqueue",
        {
            "args": vars(args),
            "machine": common.server_info(args.dsn),
            "results": [
                {"system": k[0], "setting": k[1], "jobs_per_s": v, "median": med[k]}
                for k, v in results.items()
            ],
            "ratios": ratios,
        },
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
