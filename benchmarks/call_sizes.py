"""What one pgq.claim and one pgq.complete cost by the number of jobs in the call: the fixed
part of a call against the part that grows with its jobs.

Usage: python benchmarks/call_sizes.py [--sizes 1,10,32,100,500] [--calls 300] [--rounds 2]
                                       [--stats analyzed|none]

Per size, a scratch database gets a backlog of (calls + 50) x size no-op jobs (VACUUM ANALYZE
after; with --stats none, no ANALYZE: the fresh install's statistics, as a new deployment has
them), then one session claims `size` jobs and completes them, `calls` times, each call its own
transaction as a worker sends them (the client's own statements, ``pgq_thin.calls.CLAIM`` and
``COMPLETE``, one round trip each); the first 50 are warm-up. The figure is the wall time per
call as the client sees it (the server's work, the commit's WAL flush, the round trip), the
median over rounds; a line fitted through the sizes splits it into a fixed cost per call and a
cost per job. A worker that claims k jobs per round trip, one call in flight, cannot go faster
than k / (claim(k) + complete(k)) jobs per second.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg

from benchmarks.common import DEFAULT_DSN, install_pgq, scratch_db, server_info, table, write_json
from pgq_thin import calls

WARMUP = 50


def one(dsn: str, size: int, n: int, analyze: bool = True) -> tuple[float, float]:
    """Seconds per claim and per complete of `size` jobs (after the warm-up calls)."""
    with scratch_db(dsn, "call_sizes") as db:
        install_pgq(db)
        wid = uuid.uuid4()
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(
                "SELECT count(*) FROM pgq.enqueue_many(array_fill('noop'::text, ARRAY[%s]))",
                ((n + WARMUP) * size,),
            )
            if analyze:
                conn.execute("VACUUM ANALYZE")
            claim = complete = 0.0
            for i in range(n + WARMUP):
                t0 = time.perf_counter()
                rows = conn.execute(calls.CLAIM, (wid, ["noop"], size, uuid.uuid4())).fetchall()
                t1 = time.perf_counter()
                args = calls.complete_args(
                    wid,
                    [r[0] for r in rows],
                    [r[1] for r in rows],
                    ["successful"] * len(rows),
                    [None] * len(rows),
                )
                done = conn.execute(calls.COMPLETE, args).fetchall()
                t2 = time.perf_counter()
                if len(rows) != size or len(done) != size:
                    raise RuntimeError(f"claimed {len(rows)}, completed {len(done)} of {size}")
                if i >= WARMUP:
                    claim, complete = claim + t1 - t0, complete + t2 - t1
    return claim / n, complete / n


def fit(xs: list[float], ys: list[float]) -> tuple[float, float]:
    """Least squares: intercept, slope."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )
    return my - slope * mx, slope


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=DEFAULT_DSN)
    parser.add_argument("--sizes", default="1,10,32,100,500")
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--stats", choices=("analyzed", "none"), default="analyzed")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    runs: dict[int, list[tuple[float, float]]] = {s: [] for s in sizes}
    for rnd in range(args.rounds):
        for size in sizes if rnd % 2 == 0 else sizes[::-1]:
            runs[size].append(one(args.dsn, size, args.calls, args.stats == "analyzed"))
            c, f = runs[size][-1]
            print(f"  [{rnd + 1}/{args.rounds}] {size}: claim {c * 1e3:.3f} ms, "
                  f"complete {f * 1e3:.3f} ms", flush=True)  # fmt: skip
    med: dict[int, dict[str, float]] = {}
    for size in sizes:
        med[size] = {
            "claim_ms": statistics.median(r[0] for r in runs[size]) * 1e3,
            "complete_ms": statistics.median(r[1] for r in runs[size]) * 1e3,
        }
    rows: list[list[Any]] = []
    for size in sizes:
        c, f = med[size]["claim_ms"], med[size]["complete_ms"]
        per_job, rate = (c + f) * 1e3 / size, size / (c + f) * 1e3
        rows.append([size, f"{c:.3f}", f"{f:.3f}", f"{per_job:,.0f}", f"{rate:,.0f}"])
    print()
    print(
        table(
            [
                "jobs per call",
                "claim ms",
                "complete ms",
                "µs per job",
                "jobs/s, one call in flight",
            ],
            rows,
        )
    )
    fits = {}
    for what in ("claim_ms", "complete_ms"):
        a, b = fit([float(s) for s in sizes], [med[s][what] for s in sizes])
        fits[what] = {"fixed_ms": a, "per_job_us": b * 1e3}
        print(f"{what[:-3]}: {a:.3f} ms per call + {b * 1e3:.1f} µs per job (least squares)")
    path = write_json(
        "call-sizes",
        {"server": server_info(args.dsn), "args": vars(args), "runs": runs, "median": med,
         "fit": fits},
    )  # fmt: skip
    print(f"JSON: {path}")


if __name__ == "__main__":
    main()
