"""Where the CPU of a drain goes: the worker process against the PostgreSQL server.

Usage: python benchmarks/cpu_split.py [--dsn DSN] [--jobs 100000] [--repeat 2]

For each runner, a scratch database with --jobs no-op jobs pre-enqueued, then one drain by
benchmarks/thin_agent.py. Measured: wall time (first claim to the agent's last handler, or to
the end of the loop for the SQL loop), CPU seconds of the agent process (user + system, from
the rusage of the child) and CPU seconds of every PostgreSQL server process of this machine
(user + system from /proc/<pid>/stat of processes named postgres, sampled every 50 ms: the
backend of the drain, the WAL writer, the checkpointer...). The server must run on this
machine; other work on it counts too, so run it on an otherwise idle machine.

Runners: ThinWorker batch 500 with concurrency 500 and 1000 (room for one and for two
batches), and the pipelined SQL loop (the client's own claim/complete statements, no worker).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import threading
from pathlib import Path
from typing import Any

import common
from sql_ceiling import fill_pgq

RUNNERS = [
    (
        "ThinWorker batch 500, concurrency 500",
        ["drain-worker", "--batch", "500", "--concurrency", "500"],
    ),
    (
        "ThinWorker batch 500, concurrency 1000",
        ["drain-worker", "--batch", "500", "--concurrency", "1000"],
    ),
    ("sql-loop batch 500, pipelined", ["drain-sql", "--batch", "500", "--pipeline"]),
]
TICKS = os.sysconf("SC_CLK_TCK")


def server_cpu() -> dict[int, int]:
    """CPU ticks (user + system) of each process named postgres on this machine, by pid."""
    ticks: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:  # the process ended meanwhile
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        if name != "postgres" and not name.startswith("postgres:"):
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        ticks[int(entry.name)] = int(fields[11]) + int(fields[12])  # utime, stime
    return ticks


class ServerCpu:
    """Samples the server's processes every 50 ms: a backend that ends (the drain's own, when
    the agent disconnects) keeps the CPU of its last sample."""

    def __init__(self) -> None:
        self.start = server_cpu()
        self.last = dict(self.start)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.last.update(server_cpu())

    def seconds(self) -> float:
        self._stop.set()
        self._thread.join()
        self.last.update(server_cpu())
        return sum(t - self.start.get(pid, 0) for pid, t in self.last.items()) / TICKS


def run_one(dsn: str, jobs: int, args: list[str]) -> dict[str, Any]:
    with common.scratch_db(dsn, "cpu") as db:
        common.install_pgq(db)
        fill_pgq(db, jobs)
        server = ServerCpu()
        before_child = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(
            common.agent("thin", *args, "--dsn", db, "--timeout", "600"),
            check=True,
            capture_output=True,
            text=True,
            timeout=660,
        )
        after_child = resource.getrusage(resource.RUSAGE_CHILDREN)
        server_s = server.seconds()
    result = json.loads(out.stdout.strip().splitlines()[-1])
    end = result.get("last_handler_ns") or result["run_end_ns"]
    wall = (end - result["first_start_ns"]) / 1e9
    if result["handled"] != jobs:
        raise RuntimeError(f"{args}: {result['handled']} jobs handled, expected {jobs}")
    client = (after_child.ru_utime - before_child.ru_utime) + (
        after_child.ru_stime - before_child.ru_stime
    )
    return {
        "wall_s": wall,
        "jobs_per_s": jobs / wall,
        "client_cpu_s": client,
        "server_cpu_s": server_s,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    common.check_local(args.dsn)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name, _ in RUNNERS}
    for i in range(args.repeat):  # interleaved
        for name, cmd in RUNNERS:
            r = run_one(args.dsn, args.jobs, cmd)
            runs[name].append(r)
            print(f"  [{i + 1}/{args.repeat}] {name}: {r['jobs_per_s']:,.0f} jobs/s", flush=True)
    rows = []
    for name, rs in runs.items():
        best = max(rs, key=lambda r: r["jobs_per_s"])
        per_job = 1e6 / args.jobs
        rows.append(
            [
                name,
                f"{best['jobs_per_s']:,.0f}",
                f"{best['wall_s']:.2f}",
                f"{best['client_cpu_s']:.2f} ({best['client_cpu_s'] * per_job:.0f} us/job)",
                f"{best['server_cpu_s']:.2f} ({best['server_cpu_s'] * per_job:.0f} us/job)",
            ]
        )
    print()
    print(f"Drain of {args.jobs:,} no-op jobs: the fastest of {args.repeat} run(s) per runner")
    print()
    print(
        common.table(
            ["runner", "jobs/s", "wall s", "worker CPU s", "server CPU s"],
            rows,
        )
    )
    path = common.write_json(
        "cpu-split",
        {"args": vars(args), "machine": common.server_info(args.dsn), "runs": runs},
    )
    print(f"\nJSON: {path}")


if __name__ == "__main__":
    main()
