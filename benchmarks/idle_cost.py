"""What idle workers cost the server, by maintain_interval.

Usage: python -m benchmarks.idle_cost [--dsn DSN] [--workers 8] [--intervals 1,5,off]
                                      [--seconds 30] [--warm 5] [--repeat 2]

One scratch database (dropped at the end) with the schema installed and nothing queued. For
each interval, --workers ThinWorker processes (``thin_agent.py idle-worker``: ThinWorker's
defaults but ``maintain_interval``, one entrypoint with nothing to run) start together; after
--warm seconds (start-up, registration, the first calls) the server's CPU time (every process of
the server, from /proc) and the database's commits (``pg_stat_database.xact_commit``) are read,
and again --seconds later. The intervals run in turn, every other round in reverse order.

Prints, per interval, the medians over the rounds: server CPU in milliseconds per second (the
whole fleet, and per worker) and commits per second. "off" runs no maintain loop at all: the
difference is what the cadence costs. Everything an idle worker does (its poll for work, its
heartbeat, pruning and rollup) is in every row.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from typing import Any

import psycopg

from benchmarks import common

COMMITS = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"


def commits(db: str) -> int:
    with psycopg.connect(db, autocommit=True) as conn:
        row = conn.execute(COMMITS).fetchone()
    assert row is not None
    return int(row[0])


def measure(
    db: str, cpu: common.ServerCpu, args: argparse.Namespace, interval: str
) -> dict[str, Any]:
    cmd = common.agent(
        "thin",
        "idle-worker",
        "--dsn",
        db,
        "--seconds",
        str(args.warm + args.seconds + 1),
        "--maintain-interval",
        interval,
    )
    done: list[Any] = []
    runner = threading.Thread(
        target=lambda: done.append(
            common.run_agents([cmd] * args.workers, args.warm + args.seconds + 120)
        )
    )
    runner.start()
    time.sleep(args.warm)  # pacing: the workers start and settle
    cpu0, c0, t0 = cpu.seconds(), commits(db), time.monotonic()
    time.sleep(args.seconds)
    cpu1, c1, t1 = cpu.seconds(), commits(db), time.monotonic()
    runner.join()
    if len(done) != 1 or len(done[0]) != args.workers:
        raise RuntimeError(f"the idle workers did not all finish ({interval})")
    span = t1 - t0
    return {
        "interval": interval,
        "server_ms_per_s": 1000 * (cpu1 - cpu0) / span,
        "commits_per_s": (c1 - c0) / span,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--dsn", default=common.DEFAULT_DSN)
    p.add_argument("--workers", type=int, default=8)
    p.add_argument("--intervals", default="1,5,off")
    p.add_argument("--seconds", type=float, default=30.0)
    p.add_argument("--warm", type=float, default=5.0)
    p.add_argument("--repeat", type=int, default=2)
    args = p.parse_args()
    common.check_local(args.dsn)
    intervals = args.intervals.split(",")
    runs: list[dict[str, Any]] = []
    with common.scratch_db(args.dsn, "idle") as db:
        common.install_pgq(db)
        cpu = common.ServerCpu(common.postmaster_pid(db))
        try:
            for r in range(args.repeat):
                for interval in intervals if r % 2 == 0 else intervals[::-1]:
                    run = measure(db, cpu, args, interval)
                    run["round"] = r
                    runs.append(run)
                    print(
                        f"  round {r + 1}, maintain_interval {interval}:"
                        f" {run['server_ms_per_s']:.1f} ms/s, {run['commits_per_s']:.1f} commits/s",
                        flush=True,
                    )
        finally:
            cpu.stop()
    rows = []
    for interval in intervals:
        mine = [x for x in runs if x["interval"] == interval]
        ms = statistics.median(x["server_ms_per_s"] for x in mine)
        rows.append(
            [
                interval,
                f"{ms:.1f}",
                f"{ms / args.workers:.2f}",
                f"{statistics.median(x['commits_per_s'] for x in mine):.1f}",
            ]
        )
    print(f"\n{args.workers} idle workers, {args.seconds:.0f} s each, medians of {args.repeat}:")
    print(
        common.table(["maintain_interval", "server CPU ms/s", "per worker ms/s", "commits/s"], rows)
    )
    path = common.write_json(
        "idle-cost",
        {"args": vars(args), "machine": common.server_info(args.dsn), "runs": runs},
    )
    print(f"results: {path}")


if __name__ == "__main__":
    main()
