"""Scale-out: 1, 2, 4 and 8 worker processes against one server, producers running.

Usage: python benchmarks/scale_out.py [--shared-server --dsn DSN] [--workers 1,2,4,8]
           [--jobs 200000] [--rate 8000] [--handler-ms 10] [--batch 50] [--concurrency 100]
           [--systems thin,pgqueuer-asyncpg] [--repeat 1] [--plot docs/images/scale-out.png]

The server is one of the benchmark's own (an embedded PostgreSQL, initdb defaults, autovacuum
on), so its CPU is this benchmark's alone; --shared-server uses --dsn's instead. Per system
and worker count, a fresh scratch database: N worker processes are started idle (each
a ThinWorker with --batch and --concurrency, or a PgQueuer QueueManager at --batch; every job's
handler sleeps --handler-ms on the event loop), then one producer process offers --jobs jobs at
--rate jobs/s on a fixed tick grid (benchmarks/grid.py, batches every 10 ms) while they work. The
step ends when the database has recorded every job as finished; the workers are then told to
stop (their standard input closes) and report.

Per step: **jobs/s** (jobs / (last handler end - first handler start), all processes),
**server CPU** (the server's processes, from /proc: µs per job, and cores busy on average over
the step), the workers' own CPU (cores busy), and **pickup** p50/p99 (enqueue call start to
handler start: low while the workers keep up with the offered rate, growing with the backlog
once they do not). Where jobs/s stops growing with N while the server's cores busy approach the
machine's, the server saturates; where it stops growing while the server has room, the workers
(their Python) do. The machine's cores are shared by the server, the producer and N workers.

--plot writes a PNG of the three figures against N (needs matplotlib: `pip install -e '.[bench]'`).
Results: benchmarks/results/scale-out-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import drain

SYSTEMS = {
    "thin": ("pgq-thin ThinWorker", "thin", []),
    "pgqueuer-asyncpg": ("pgqueuer-asyncpg", "peer", ["--driver", "asyncpg"]),
    "pgqueuer-psycopg": ("pgqueuer-psycopg", "peer", ["--driver", "psycopg"]),
}


def run_step(args: argparse.Namespace, key: str, n: int, postmaster: int) -> dict[str, Any]:
    label, kind, extra = SYSTEMS[key]
    seconds = args.jobs / args.rate
    timeout = seconds * 20 + 120
    wargs = ["--batch", str(args.batch), "--handler-ms", str(args.handler_ms)]
    if kind == "thin":
        wargs += ["--concurrency", str(args.concurrency)]
    with common.scratch_db(args.dsn, "scale") as db:
        if kind == "thin":
            common.install_pgq(db)
        else:
            common.install_pgqueuer(db)
        workers = [
            subprocess.Popen(
                common.agent(
                    kind, "scale-worker", "--dsn", db, "--timeout", str(timeout), *wargs, *extra
                ),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                cwd=common.ROOT,
            )
            for _ in range(n)
        ]
        try:
            time.sleep(args.settle)  # connect and LISTEN before the first job
            for w in workers:
                if w.poll() is not None:
                    raise RuntimeError(f"{label} worker exited early:\n{w.stderr.read()[-3000:]}")  # type: ignore[union-attr]
            cpu = common.ServerCpu(postmaster)
            wall0 = time.monotonic()
            producer = common.run_agents(
                [
                    common.agent(
                        kind,
                        "steady-producer",
                        "--dsn",
                        db,
                        "--rates",
                        str(args.rate),
                        "--seconds",
                        str(seconds),
                        "--pause",
                        "0",
                        *extra,
                    )
                ],
                timeout,
            )[0]
            sent = sum(p["sent"] for p in producer["phases"])
            deadline = time.monotonic() + timeout
            while True:
                done, _ = drain.finished(db, kind)
                if done >= sent or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            server_s = cpu.stop()
            wall = time.monotonic() - wall0
            worker_s = sum(common.process_cpu_s(w.pid) or 0.0 for w in workers)
            reports = []
            for w in workers:
                out, err = w.communicate(input="", timeout=120)
                if w.returncode != 0:
                    raise RuntimeError(f"{label} worker failed:\n{err[-3000:]}")
                reports.append(json.loads(out.strip().splitlines()[-1]))
        finally:
            for w in workers:
                if w.poll() is None:
                    w.kill()
                    w.wait()
        if done != sent:
            raise RuntimeError(f"{label}, {n} workers: {done} jobs finished, {sent} sent")
    hist = common.LogHistogram()
    for r in reports:
        part = common.LogHistogram.from_dict(r["hist"])
        hist.counts = [a + b for a, b in zip(hist.counts, part.counts, strict=True)]
        hist.total += part.total
        hist.clamped += part.clamped
        hist.max_us = max(hist.max_us, part.max_us)
    first = min(r["first_ns"] for r in reports if r["first_ns"])
    last = max(r["last_ns"] for r in reports)
    return {
        "system": label,
        "workers": n,
        "jobs": sent,
        "offered_rate": producer["phases"][0]["sent"] / producer["phases"][0]["seconds"],
        "jobs_per_s": hist.total / ((last - first) / 1e9),
        "server_cpu_us_per_job": server_s * 1e6 / sent,
        "server_cores_busy": server_s / wall,
        "worker_cores_busy": worker_s / wall,
        "handled": hist.total,
        **hist.summary_ms(),
    }


def plot(rows: list[dict[str, Any]], path: Path, args: argparse.Namespace) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    panels = [
        ("jobs_per_s", "jobs/s (all workers)", False),
        ("server_cpu_us_per_job", "server CPU, µs per job", False),
        ("p99_ms", "pickup p99, ms (log)", True),
    ]
    for ax, (key, title, log) in zip(axes, panels, strict=True):
        for system in dict.fromkeys(r["system"] for r in rows):
            mine = sorted((r for r in rows if r["system"] == system), key=lambda r: r["workers"])
            ax.plot([r["workers"] for r in mine], [r[key] for r in mine], marker="o", label=system)
        ax.set_title(title)
        ax.set_xlabel("worker processes")
        ax.set_xscale("log", base=2)
        ax.set_xticks([int(w) for w in args.workers.split(",")])
        ax.get_xaxis().set_major_formatter(matplotlib.ticker.ScalarFormatter())
        if log:
            ax.set_yscale("log")
        ax.grid(True, alpha=0.3)
    axes[0].axhline(args.rate, color="grey", linestyle="--", linewidth=1, label="offered rate")
    axes[0].legend(fontsize=8)
    fig.suptitle(
        f"{args.jobs:,} jobs offered at {args.rate:,.0f}/s, {args.handler_ms:g} ms async handlers,"
        f" one PostgreSQL server, {os.cpu_count()} cores shared by everything"
    )
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dsn", default=common.DEFAULT_DSN)
    p.add_argument("--systems", default="thin,pgqueuer-asyncpg")
    p.add_argument("--workers", default="1,2,4,8")
    p.add_argument("--jobs", type=int, default=200_000)
    p.add_argument("--rate", type=float, default=8000.0, help="offered jobs/s")
    p.add_argument("--handler-ms", type=float, default=10.0)
    p.add_argument("--batch", type=int, default=50)
    p.add_argument("--concurrency", type=int, default=100, help="pgq-thin, per process")
    p.add_argument("--settle", type=float, default=2.0)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--plot", default=None, help="write a PNG of the curve here")
    p.add_argument(
        "--shared-server",
        action="store_true",
        help="use --dsn's server (its other sessions' CPU counts too); default: a server of the"
        " benchmark's own (embedded PostgreSQL, initdb defaults)",
    )
    args = p.parse_args()
    if args.shared_server:
        run(args)
    else:
        with common.embedded_server() as dsn:
            args.dsn = dsn
            run(args)


def run(args: argparse.Namespace) -> None:
    postmaster = common.postmaster_pid(args.dsn)
    rows: list[dict[str, Any]] = []
    for rnd in range(args.repeat):
        order = [s for s in args.systems.split(",") if s]
        if rnd % 2:
            order.reverse()
        for key in order:
            for n in (int(w) for w in args.workers.split(",")):
                row = run_step(args, key, n, postmaster)
                row["round"] = rnd + 1
                rows.append(row)
                print(
                    f"{row['system']:<22} {n} workers: {row['jobs_per_s']:8,.0f} jobs/s, server "
                    f"{row['server_cpu_us_per_job']:6.1f} µs/job ({row['server_cores_busy']:.2f}"
                    f" cores), workers {row['worker_cores_busy']:.2f} cores, pickup p50/p99 "
                    f"{row['p50_ms']:.1f}/{row['p99_ms']:.1f} ms",
                    flush=True,
                )
    print()
    print(
        common.table(
            [
                "system",
                "workers",
                "round",
                "jobs/s",
                "server µs/job",
                "server cores",
                "worker cores",
                "pickup p50 ms",
                "pickup p99 ms",
            ],
            [
                [
                    r["system"],
                    r["workers"],
                    r["round"],
                    f"{r['jobs_per_s']:,.0f}",
                    f"{r['server_cpu_us_per_job']:.1f}",
                    f"{r['server_cores_busy']:.2f}",
                    f"{r['worker_cores_busy']:.2f}",
                    f"{r['p50_ms']:.1f}",
                    f"{r['p99_ms']:.1f}",
                ]
                for r in rows
            ],
        )
    )
    out = common.write_json(
        "scale-out", {"args": vars(args), "server": common.server_info(args.dsn), "rows": rows}
    )
    print(f"\nresults: {out}")
    if args.plot:
        plot(rows, Path(args.plot), args)
        print(f"plot: {args.plot}")


if __name__ == "__main__":
    main()
