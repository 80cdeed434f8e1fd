"""Steady state: a producer at a fixed offered rate, one worker process keeping up.

Usage: python benchmarks/steady.py [--dsn DSN] [--rates 500,2000,5000] [--seconds 20]
                                   [--tick-ms 10] [--batch 100] [--concurrency 100]
                                   [--systems thin,pgqueuer-asyncpg]

Per system: a fresh scratch database, one worker process started idle (--settle seconds to
connect and LISTEN), then one producer process that runs the rates one after the other (a
phase of --seconds each, --pause seconds between phases). Every --tick-ms the producer
enqueues, in one batched call, every job that is due by then on a fixed grid (rate x elapsed
time), so a late tick catches up and the offered rate holds; at 500 / 2,000 / 5,000 jobs/s and
10 ms ticks that is batches of about 5 / 20 / 50 jobs. The payload carries the phase and
time.time_ns() taken just before the enqueue call; the handler (a no-op) records
time.time_ns() at its start minus that, into a bounded log-bucket histogram (1 % buckets,
HDR-style) per phase, inside the worker process. Both processes read the same clock.

Per phase: completion rate = jobs handled / (last handler start of the phase - phase start),
pickup latency p50/p95/p99/max (enqueue call start -> handler start). The database count of
finished jobs must equal the jobs sent, or the run fails.

  pgq-thin           ThinWorker (batch_size / concurrency as given, LISTEN, poll 5 s),
                     Queue.enqueue_many
  pgqueuer-<driver>  QueueManager.run (batch_size as given), Queries.enqueue with lists,
                     same driver on both sides (PgQueuer 1.6.0 from .venv-bench)
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
import drain

SYSTEMS = {
    "thin": ("pgq-thin ThinWorker", "thin", []),
    "pgqueuer-asyncpg": ("pgqueuer-asyncpg", "peer", ["--driver", "asyncpg"]),
    "pgqueuer-psycopg": ("pgqueuer-psycopg", "peer", ["--driver", "psycopg"]),
}


def run_system(args: argparse.Namespace, key: str) -> dict[str, Any]:
    label, kind, extra = SYSTEMS[key]
    rates = [float(r) for r in args.rates.split(",")]
    jobs = sum(int(r * args.seconds) for r in rates)
    timeout = len(rates) * (args.seconds * 3 + 10 + args.pause) + 60
    wargs = ["--batch", str(args.batch)]
    if kind == "thin":
        wargs += ["--concurrency", str(args.concurrency)]
        if args.maintain_interval is not None:
            wargs += ["--maintain-interval", args.maintain_interval]
    with common.scratch_db(args.dsn, "steady") as db:
        if kind == "thin":
            common.install_pgq(db)
        else:
            common.install_pgqueuer(db)
        worker = subprocess.Popen(
            common.agent(
                kind,
                "steady-worker",
                "--dsn",
                db,
                "--jobs",
                str(jobs),
                "--timeout",
                str(timeout),
                *wargs,
                *extra,
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=common.ROOT,
        )
        try:
            time.sleep(args.settle)
            if worker.poll() is not None:
                raise RuntimeError(f"{label} worker exited early:\n{worker.stderr.read()[-3000:]}")  # type: ignore[union-attr]
            producer = common.run_agents(
                [
                    common.agent(
                        kind,
                        "steady-producer",
                        "--dsn",
                        db,
                        "--rates",
                        args.rates,
                        "--seconds",
                        str(args.seconds),
                        "--tick-ms",
                        str(args.tick_ms),
                        "--pause",
                        str(args.pause),
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
        done, _ = drain.finished(db, kind)
    res = json.loads(out.strip().splitlines()[-1])
    sent = sum(p["sent"] for p in producer["phases"])
    if done != sent:
        raise RuntimeError(f"{label}: {done} jobs finished in the database, {sent} sent")
    phases = []
    for ph in producer["phases"]:
        got = res["phases"].get(str(ph["phase"]))
        hist = common.LogHistogram.from_dict(got["hist"]) if got else common.LogHistogram()
        seconds = (got["last_ns"] - ph["start_ns"]) / 1e9 if got else float("nan")
        phases.append(
            {
                "system": label,
                "offered_rate": ph["rate"],
                "sent": ph["sent"],
                "achieved_offered_rate": ph["sent"] / ph["seconds"],
                "producer_calls": ph["calls"],
                "producer_max_lag_ms": ph["max_lag_ms"],
                "handled": hist.total,
                "completion_rate": hist.total / seconds if got else 0.0,
                **hist.summary_ms(),
                "clamped": hist.clamped,
                "histogram": hist.to_dict(),
            }
        )
    return {"system": label, "finished_in_db": done, "sent": sent, "phases": phases}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--rates", default="500,2000,5000")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--tick-ms", type=float, default=10.0)
    parser.add_argument("--pause", type=float, default=2.0)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--concurrency", type=int, default=100)
    parser.add_argument(
        "--maintain-interval",
        default=None,
        help="pgq-thin worker: seconds, or off (default: ThinWorker's own)",
    )
    parser.add_argument("--settle", type=float, default=3.0)
    parser.add_argument("--systems", default="thin,pgqueuer-asyncpg")
    args = parser.parse_args()
    common.check_local(args.dsn)
    results = []
    for key in args.systems.split(","):
        r = run_system(args, key)
        results.append(r)
        for ph in r["phases"]:
            print(
                f"  {r['system']} @ {ph['offered_rate']:,.0f}/s: {ph['completion_rate']:,.0f}/s, "
                f"p50 {ph['p50_ms']:.2f} ms, p99 {ph['p99_ms']:.2f} ms",
                file=sys.stderr,
                flush=True,
            )
    print(
        f"\nSteady state, {args.seconds:g} s per offered rate, enqueue every {args.tick_ms:g} ms, "
        f"one worker process (batch {args.batch}); latency = enqueue call start -> handler start\n"
    )
    print(
        common.table(
            [
                "system",
                "offered/s",
                "jobs",
                "completed/s",
                "p50 ms",
                "p95 ms",
                "p99 ms",
                "max ms",
                "producer lag max ms",
            ],
            [
                [
                    ph["system"],
                    ph["offered_rate"],
                    f"{ph['handled']}/{ph['sent']}",
                    ph["completion_rate"],
                    ph["p50_ms"],
                    ph["p95_ms"],
                    ph["p99_ms"],
                    ph["max_ms"],
                    ph["producer_max_lag_ms"],
                ]
                for r in results
                for ph in r["phases"]
            ],
        )
    )
    ratios: dict[str, float] = {}
    by = {r["system"]: r for r in results}
    if "pgq-thin ThinWorker" in by and "pgqueuer-asyncpg" in by:
        lines = []
        for a, b in zip(
            by["pgq-thin ThinWorker"]["phases"], by["pgqueuer-asyncpg"]["phases"], strict=True
        ):
            rate = f"{a['offered_rate']:.0f}"
            for m in ("p50_ms", "p99_ms"):
                ratios[f"{rate}/{m}"] = a[m] / b[m]
            lines.append(
                f"@ {a['offered_rate']:,.0f}/s  pgq-thin / pgqueuer-asyncpg: "
                f"p50 {ratios[f'{rate}/p50_ms']:.2f}x, p99 {ratios[f'{rate}/p99_ms']:.2f}x"
            )
        print("\n" + "\n".join(lines) + "  (lower is better)")
    path = common.write_json(
        "steady",
        {
            "args": vars(args),
            "machine": common.server_info(args.dsn),
            "results": results,
            "ratios": ratios,
        },
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
