"""Pickup latency on an idle worker: a producer enqueues one job every --interval-ms.

Usage: python benchmarks/latency.py [--dsn DSN] [--jobs 1000] [--interval-ms 20]
                                    [--systems thin,pgqueuer-asyncpg,pgqueuer-psycopg]
                                    [--thin-defaults]

Per system: a fresh scratch database, one worker process started idle (given --settle seconds
to connect and LISTEN), then one producer process enqueuing --jobs jobs at a fixed offered rate
(one single-job enqueue call each, scheduled on a fixed grid, not "interval after the last").
The producer puts time.time_ns() taken just before the enqueue call into the payload; the
handler takes time.time_ns() when it starts. Both processes run on this machine, so they read
the same clock. Latencies go into a bounded log-bucket histogram (1 % buckets, HDR-style);
p50/p95/p99/max are reported.

  pgq-thin           ThinWorker (LISTEN on pgq_events, poll 5 s, batch 100, concurrency 100;
                     --thin-defaults: ThinWorker(dsn), nothing tuned), Queue.enqueue
  pgqueuer-<driver>  QueueManager.run (batch 10), Queries.enqueue, same driver both sides
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common

SYSTEMS = {
    "thin": ("pgq-thin ThinWorker", "thin", "latency-worker", "latency-producer", []),
    "pgqueuer-asyncpg": (
        "pgqueuer-asyncpg",
        "peer",
        "latency-worker",
        "latency-producer",
        ["--driver", "asyncpg"],
    ),
    "pgqueuer-psycopg": (
        "pgqueuer-psycopg",
        "peer",
        "latency-worker",
        "latency-producer",
        ["--driver", "psycopg"],
    ),
}


def run_system(
    dsn: str, key: str, jobs: int, interval_ms: float, settle: float, worker_args: list[str]
) -> dict[str, Any]:
    label, kind, wcmd, pcmd, extra = SYSTEMS[key]
    timeout = jobs * interval_ms / 1000.0 + 60
    with common.scratch_db(dsn, "latency") as db:
        if kind == "thin":
            common.install_pgq(db)
        else:
            common.install_pgqueuer(db)

        worker = subprocess.Popen(
            common.agent(
                kind,
                wcmd,
                "--dsn",
                db,
                "--jobs",
                str(jobs),
                "--timeout",
                str(timeout),
                *extra,
                *(worker_args if kind == "thin" else []),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=common.ROOT,
        )
        try:
            time.sleep(settle)
            if worker.poll() is not None:
                raise RuntimeError(f"{label} worker exited early:\n{worker.stderr.read()[-3000:]}")  # type: ignore[union-attr]
            producer = common.run_agents(
                [
                    common.agent(
                        kind,
                        pcmd,
                        "--dsn",
                        db,
                        "--jobs",
                        str(jobs),
                        "--interval-ms",
                        str(interval_ms),
                        *extra,
                    )
                ],
                timeout,
            )[0]
            out, err = worker.communicate(timeout=timeout)
        finally:
            if worker.poll() is None:
                worker.kill()
                worker.wait()
    if worker.returncode != 0:
        raise RuntimeError(f"{label} worker failed:\n{err[-3000:]}")

    lat = json.loads(out.strip().splitlines()[-1])["latencies_ns"]
    hist = common.LogHistogram()
    for ns in lat:
        hist.record(ns / 1000.0)
    ms = {p: hist.percentile(p) / 1000.0 for p in (50, 95, 99)}
    return {
        "system": label,
        "received": len(lat),
        "sent": producer["jobs"],
        "offered_rate": producer["jobs"] / producer["seconds"],
        "p50_ms": ms[50],
        "p95_ms": ms[95],
        "p99_ms": ms[99],
        "max_ms": hist.max_us / 1000.0,
        "clamped": hist.clamped,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--interval-ms", type=float, default=20.0)
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--systems", default="thin,pgqueuer-asyncpg,pgqueuer-psycopg")
    parser.add_argument(
        "--thin-defaults", action="store_true", help="the ThinWorker with its defaults"
    )
    args = parser.parse_args()
    common.check_local(args.dsn)
    rows = []
    for key in args.systems.split(","):
        worker_args = ["--defaults"] if args.thin_defaults else []
        r = run_system(args.dsn, key, args.jobs, args.interval_ms, args.settle, worker_args)
        rows.append(r)
        print(
            f"  {r['system']}: p50 {r['p50_ms']:.2f} ms, p99 {r['p99_ms']:.2f} ms",
            file=sys.stderr,
            flush=True,
        )
    print(
        f"\nPickup latency, idle worker, 1 job every {args.interval_ms:g} ms, "
        f"{args.jobs:,} jobs (enqueue call start -> handler start)\n"
    )
    print(
        common.table(
            ["system", "jobs seen", "p50 ms", "p95 ms", "p99 ms", "max ms"],
            [
                [
                    r["system"],
                    f"{r['received']}/{r['sent']}",
                    r["p50_ms"],
                    r["p95_ms"],
                    r["p99_ms"],
                    r["max_ms"],
                ]
                for r in rows
            ],
        )
    )
    ratios = {}
    by = {r["system"]: r for r in rows}
    if "pgq-thin ThinWorker" in by and "pgqueuer-asyncpg" in by:
        a, b = by["pgq-thin ThinWorker"], by["pgqueuer-asyncpg"]
        ratios = {
            "p50/pgqueuer_asyncpg": a["p50_ms"] / b["p50_ms"],
            "p99/pgqueuer_asyncpg": a["p99_ms"] / b["p99_ms"],
        }
        print(
            f"\npgq-thin / pgqueuer-asyncpg: p50 {ratios['p50/pgqueuer_asyncpg']:.2f}x, "
            f"p99 {ratios['p99/pgqueuer_asyncpg']:.2f}x (lower is better)"
        )
    path = common.write_json(
        "latency",
        {
            "args": vars(args),
            "machine": common.server_info(args.dsn),
            "rows": rows,
            "ratios": ratios,
        },
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
