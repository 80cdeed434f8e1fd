"""Drain throughput: N no-op jobs pre-enqueued, worker process(es) draining them.

Usage: python benchmarks/drain.py [--dsn DSN] [--jobs 20000] [--processes 1] [--repeat 1]
                                  [--systems thin,sql,pgqueuer] [--no-ceiling]
                                  [--settings TEXT] [--only NAMES] [--thin B:C,...]
                                  [--drivers asyncpg,psycopg]
                                  [--log-level L] [--log-format F] [--metrics]

Every (system, setting) run gets a fresh scratch database with its own schema (pgq-thin via
pgq_thin.migrate, PgQueuer via its own `pgq install`), N jobs enqueued through the system's own
batch enqueue, VACUUM (ANALYZE), then --processes worker processes start together.
jobs/s = N / (last completion as recorded in the database - first handler start (first claim
for the SQL loop)); the database count of finished jobs must equal N. Repeats are interleaved,
every other round in reverse order (A B, B A, A B), and the table shows the median (all values
are in the JSON); ratios are also given per round.

Systems and settings:
  pgq-thin            ThinWorker, async no-op handler, batch_size / concurrency as listed;
                      "defaults" is ThinWorker(dsn) with nothing tuned; "results connection"
                      adds results_connection=True (results written beside the claims).
  pgq-thin sql-loop   "thin client floor": bare psycopg loop of pgq.claim + pgq.complete using
                      the client's own statements (no worker machinery); pipeline variant sends
                      complete(previous) and claim(next) in one round trip.
  pgqueuer-asyncpg / pgqueuer-psycopg   PgQueuer 1.6.0 QueueManager, drain mode, batch 10/100/500
                      (batch 10 is QueueManager.run()'s default); --drivers picks the drivers.
The SQL ceiling (pgbench, pgq-1tx script, same batch, 1 client per process) runs in the same
invocation unless --no-ceiling. --settings keeps the settings whose name contains TEXT; --only
keeps those named exactly (separated by |: `--only "defaults|batch 10|batch 500"`). --thin B:C,...
adds ThinWorker settings "batch B, concurrency C" (B:C:F also sets flush_size F).
--log-level (with --log-format text|json) makes the ThinWorker log as `pgq-thin run` does, to a
pipe; --metrics makes it serve its Prometheus metrics: the cost of observing the drain.

Statistics states (docs/decisions/0007), each run for every setting, in one invocation:
  --stats analyzed,none  the backlog is enqueued into a fresh install, then VACUUM (ANALYZE)
                      (analyzed) or nothing (none: no statistics at all; with autovacuum on,
                      whatever it did meanwhile). --own-server runs everything on a PostgreSQL
                      of the benchmark's own (initdb defaults: autovacuum on).
  --burst N           a worker started on an empty, never analyzed queue runs 100 warm-up jobs
                      (its plans are made and cached on the near-empty queue), idles 3 s, then N
                      jobs arrive in one enqueue statement; jobs/s over the N.
  --produce N         no backlog: a producer (another process) enqueues N jobs in batches of
                      1,000 as fast as it can while the worker drains them; ThinWorker runs
                      pgq.maintain every 0.5 s, so the ring turns (every 2 s at most) and drained
                      slots are truncated while it runs (the number of turns is reported).
Each state's table gives every setting's median and its ratio to the analyzed figure.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg
import sql_ceiling

THIN_SETTINGS = [
    # ThinWorker(dsn): nothing tuned (see WorkerSettings for what that is)
    ("defaults", ["--defaults"]),
    ("batch 10, concurrency 10", ["--batch", "10", "--concurrency", "10"]),
    ("batch 100, concurrency 100", ["--batch", "100", "--concurrency", "100"]),
    ("batch 500, concurrency 500", ["--batch", "500", "--concurrency", "500"]),
    # room for two batches: the worker claims the next batch while it runs the current one
    ("batch 100, concurrency 200", ["--batch", "100", "--concurrency", "200"]),
    ("batch 500, concurrency 1000", ["--batch", "500", "--concurrency", "1000"]),
    # results written on a connection of their own, beside the claims (results_connection)
    ("defaults, results connection", ["--defaults", "--results-connection"]),
    (
        "batch 500, concurrency 1000, results connection",
        ["--batch", "500", "--concurrency", "1000", "--results-connection"],
    ),
]
SQL_SETTINGS = [
    ("batch 100", ["--batch", "100"]),
    ("batch 100, pipelined", ["--batch", "100", "--pipeline"]),
    ("batch 500, pipelined", ["--batch", "500", "--pipeline"]),
]
PEER_BATCHES = [10, 100, 500]


def configs(systems: set[str], drivers: list[str]) -> list[tuple[str, str, str, list[str]]]:
    """(system, setting, kind, agent args)."""
    out = []
    if "thin" in systems:
        out += [("pgq-thin ThinWorker", s, "thin", ["drain-worker", *a]) for s, a in THIN_SETTINGS]
    if "sql" in systems:
        out += [
            ("pgq-thin sql-loop (floor)", s, "thin", ["drain-sql", *a]) for s, a in SQL_SETTINGS
        ]
    if "pgqueuer" in systems:
        for driver in drivers:
            out += [
                (
                    f"pgqueuer-{driver}",
                    f"batch {b}",
                    "peer",
                    ["drain", "--driver", driver, "--batch", str(b)],
                )
                for b in PEER_BATCHES
            ]
    return out


def thin_setting(spec: str) -> tuple[str, list[str]]:
    """--thin B:C[:F]: (setting name, agent args)."""
    batch, concurrency, *flush = spec.split(":")
    name = f"batch {batch}, concurrency {concurrency}"
    agent_args = ["--batch", batch, "--concurrency", concurrency]
    if flush:
        name += f", flush {flush[0]}"
        agent_args += ["--flush-size", flush[0]]
    return name, agent_args


def install(db: str, kind: str) -> None:
    if kind == "thin":
        common.install_pgq(db)
    else:
        common.install_pgqueuer(db)


def enqueue(db: str, kind: str, jobs: int, batch: int = 1000) -> None:
    """jobs no-op jobs through the system's own batch enqueue, batch per statement."""
    if kind == "thin":
        with psycopg.connect(db, autocommit=True) as conn:
            left = jobs
            while left > 0:
                n = min(batch, left)
                conn.execute(
                    "SELECT count(*) FROM pgq.enqueue_many(array_fill('noop'::text, ARRAY[%s]))",
                    (n,),
                )
                left -= n
        return
    subprocess.run(
        common.agent(
            "peer",
            "enqueue",
            "--dsn",
            db,
            "--driver",
            "asyncpg",
            "--jobs",
            str(jobs),
            "--batch",
            str(batch),
        ),
        check=True,
        capture_output=True,
        timeout=600,
    )


def fill(db: str, kind: str, jobs: int, analyze: bool = True) -> None:
    """A fresh install with a backlog of jobs, analyzed or not."""
    install(db, kind)
    enqueue(db, kind, jobs, 50_000 if kind == "thin" else 1000)
    if analyze:
        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(
                "VACUUM (ANALYZE) pgq.jobs" if kind == "thin" else "VACUUM (ANALYZE) pgqueuer"
            )


@contextlib.contextmanager
def producing(db: str, kind: str, jobs: int) -> Iterator[None]:
    """A producer enqueueing jobs in batches of 1,000 as fast as it can, in another thread
    (pgq-thin, its own connection) or process (PgQueuer's enqueue agent), while the body runs."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            enqueue(db, kind, jobs)
        except BaseException as e:  # reported below
            errors.append(e)

    producer = threading.Thread(target=run, daemon=True)
    producer.start()
    try:
        yield
    finally:
        producer.join(600)
    if errors:
        raise errors[0]


def wait_finished(db: str, kind: str, count: int, timeout: float) -> None:
    """Until the database has recorded count finished jobs (the burst's warm-up)."""
    deadline = time.monotonic() + timeout
    while finished(db, kind)[0] < count:
        if time.monotonic() > deadline:
            raise RuntimeError(f"{count} warm-up jobs not finished in {timeout} s")
        time.sleep(0.05)


def finished(db: str, kind: str) -> tuple[int, float]:
    """(finished jobs, epoch of the last completion) as the database recorded them."""
    query = (
        "SELECT count(*), extract(epoch FROM max(finished_at))::float8 FROM pgq.job_history"
        " WHERE status = 'successful'"
        if kind == "thin"
        else "SELECT count(*), extract(epoch FROM max(created))::float8 FROM pgqueuer_log"
        " WHERE status = 'successful'"
    )
    with psycopg.connect(db) as conn:
        row = conn.execute(query).fetchone()
    assert row is not None
    return int(row[0]), float(row[1] or 0.0)


WARMUP = 100  # the burst's warm-up jobs
IDLE_S = 3.0  # the burst's idle time after its warm-up


def run_one(
    dsn: str,
    kind: str,
    args: list[str],
    jobs: int,
    processes: int,
    timeout: float,
    state: str = "analyzed",
) -> dict[str, Any]:
    """One drain of jobs in a scratch database, in the statistics state given (see --stats,
    --burst, --produce)."""
    extra: dict[str, Any] = {}
    with common.scratch_db(dsn, "drain") as db:
        cmd = common.agent(kind, *args, "--dsn", db, "--timeout", str(timeout))
        if state in ("analyzed", "none"):
            fill(db, kind, jobs, analyze=state == "analyzed")
            results = common.run_agents([cmd] * processes, timeout + 30)
            expected = jobs
        elif state == "burst":
            install(db, kind)
            total = WARMUP + jobs
            cmd += ["--wait", "--max-jobs", str(total), "--skip", str(WARMUP)]
            with concurrent(cmd, timeout) as results:
                enqueue(db, kind, WARMUP, WARMUP)
                wait_finished(db, kind, WARMUP, 60)
                time.sleep(IDLE_S)
                enqueue(db, kind, jobs, jobs)
            expected = total
        elif state == "produce":
            install(db, kind)
            if kind == "thin":
                cmd += ["--maintain-interval", "0.5"]
            cmd += ["--wait", "--max-jobs", str(jobs)]
            with concurrent(cmd, timeout) as results, producing(db, kind, jobs):
                pass
            expected = jobs
            if kind == "thin":
                with psycopg.connect(db) as conn:
                    row = conn.execute("SELECT last_value FROM pgq.ring_seq").fetchone()
                extra["ring_turns"] = int(row[0]) if row else 0
        else:
            raise ValueError(state)
        count, last = finished(db, kind)
    first = min(r["first_start_ns"] for r in results if r["first_start_ns"]) / 1e9
    seconds = last - first
    if count != expected:
        raise RuntimeError(f"{args} ({state}): {count} jobs finished, expected {expected}")
    return {
        "state": state,
        "seconds": seconds,
        "jobs_per_s": jobs / seconds,
        "per_process_handled": [r["handled"] for r in results],
        "run_seconds": max(r["run_end_ns"] for r in results) / 1e9 - first,
        **extra,
    }


@contextlib.contextmanager
def concurrent(cmd: list[str], timeout: float) -> Iterator[list[dict[str, Any]]]:
    """The agent started in the background; after the body, its JSON result in the list."""
    results: list[dict[str, Any]] = []
    errors: list[BaseException] = []

    def run() -> None:
        try:
            results.extend(common.run_agents([cmd], timeout + 30))
        except BaseException as e:  # reported below
            errors.append(e)

    agent = threading.Thread(target=run, daemon=True)
    agent.start()
    time.sleep(1.0)  # the worker is up and polling an empty queue
    yield results
    agent.join(timeout + 60)
    if errors:
        raise errors[0]
    if not results:
        raise RuntimeError(f"{cmd}: no result")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--systems", default="thin,sql,pgqueuer")
    parser.add_argument("--no-ceiling", action="store_true")
    parser.add_argument("--timeout", type=float, default=300.0, help="per run, seconds")
    parser.add_argument("--settings", default="", help="only settings whose name contains this")
    parser.add_argument("--only", default="", help="only these settings (exact names, a|b)")
    parser.add_argument("--thin", default="", help="more ThinWorker settings: B:C[:F],...")
    parser.add_argument("--drivers", default="asyncpg,psycopg", help="PgQueuer's drivers")
    parser.add_argument("--log-level", default=None, help="ThinWorker logs at this level")
    parser.add_argument("--log-format", default="text", help="text or json (with --log-level)")
    parser.add_argument("--metrics", action="store_true", help="ThinWorker serves metrics")
    parser.add_argument("--stats", default="analyzed", help="analyzed, none or both (a,b)")
    parser.add_argument("--burst", type=int, default=0, help="also: idle worker, then N jobs")
    parser.add_argument("--produce", type=int, default=0, help="also: N jobs from a producer")
    parser.add_argument(
        "--own-server", action="store_true", help="a PostgreSQL of its own (autovacuum on)"
    )
    args = parser.parse_args()
    if args.own_server:
        with common.embedded_server() as dsn:
            args.dsn = dsn
            run(args)
    else:
        common.check_local(args.dsn)
        run(args)


def run(args: argparse.Namespace) -> None:
    states = [st for st in args.stats.split(",") if st]
    if not set(states) <= {"analyzed", "none"}:
        raise SystemExit(f"--stats: analyzed and/or none, got {args.stats}")
    states += ["burst"] * (args.burst > 0) + ["produce"] * (args.produce > 0)
    jobs_of = {"burst": args.burst, "produce": args.produce}
    observe: list[str] = []  # ThinWorker options: how it is observed
    if args.log_level:
        observe += ["--log-level", args.log_level, "--log-format", args.log_format]
    if args.metrics:
        observe.append("--metrics")
    extra = [thin_setting(spec) for spec in args.thin.split(",") if spec]
    todo = [
        ("pgq-thin ThinWorker", name, "thin", ["drain-worker", *agent_args, *observe])
        for name, agent_args in extra
    ] + [
        (system, setting, kind, agent_args + observe * (agent_args[0] == "drain-worker"))
        for system, setting, kind, agent_args in configs(
            set(args.systems.split(",")), args.drivers.split(",")
        )
        if args.settings in setting and (not args.only or setting in args.only.split("|"))
    ]
    every = [(state, *config) for state in states for config in todo]
    if states != ["analyzed"]:
        report_states(args, states, jobs_of, every)
        return
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(s, st): [] for s, st, _, _ in todo}
    ceiling: list[dict[str, Any]] = []
    for rnd in range(args.repeat):
        # every other round in reverse order (ABBA), so a drift in the load of the machine
        # weighs on every setting alike
        for system, setting, kind, agent_args in todo if rnd % 2 == 0 else todo[::-1]:
            r = run_one(args.dsn, kind, agent_args, args.jobs, args.processes, args.timeout)
            runs[(system, setting)].append(r)
            print(
                f"  [{rnd + 1}/{args.repeat}] {system} {setting}: {r['jobs_per_s']:,.0f} jobs/s",
                file=sys.stderr,
                flush=True,
            )
        if not args.no_ceiling:
            c = sql_ceiling.measure(
                args.dsn, "pgq-1tx", args.processes, max(args.jobs, 20_000), 100
            )
            ceiling.append(c)
            print(
                f"  [{rnd + 1}/{args.repeat}] SQL ceiling pgbench pgq-1tx x{args.processes}: "
                f"{c['jobs_per_s']:,.0f} jobs/s",
                file=sys.stderr,
                flush=True,
            )

    med = {k: statistics.median(r["jobs_per_s"] for r in v) for k, v in runs.items()}
    rows = [[s, st, args.processes, med[(s, st)], len(runs[(s, st)])] for s, st, _, _ in todo]
    ceil = statistics.median(c["jobs_per_s"] for c in ceiling) if ceiling else None
    if ceil:
        rows.append(
            [
                f"SQL ceiling (pgbench pgq-1tx, {args.processes} client(s))",
                "batch 100",
                args.processes,
                ceil,
                len(ceiling),
            ]
        )
    print(
        f"\nDrain of {args.jobs:,} no-op jobs, {args.processes} worker process(es); "
        f"median of {args.repeat} run(s)\n"
    )
    print(common.table(["system", "setting", "processes", "jobs/s", "runs"], rows))

    def best(prefix: str) -> tuple[float, str] | None:
        cands = [(v, f"{s}, {st}") for (s, st), v in med.items() if s.startswith(prefix)]
        return max(cands) if cands else None

    def per_round(mine: list[tuple[str, str]], theirs: list[tuple[str, str]]) -> str:
        """The ratio of the best of ``mine`` to the best of ``theirs`` in each round (runs of
        one round are the closest in time), then the median and the spread."""
        if not all(k in runs for k in mine + theirs):
            return ""
        each = [
            max(runs[k][i]["jobs_per_s"] for k in mine)
            / max(runs[k][i]["jobs_per_s"] for k in theirs)
            for i in range(args.repeat)
        ]
        if len(each) < 2:
            return ""
        listed = " / ".join(f"{r:.2f}" for r in each)
        return f"; per round {listed}, median {statistics.median(each):.2f}x"

    ratios: dict[str, float] = {}
    defaults = med.get(("pgq-thin ThinWorker", "defaults"))
    lines = []
    for driver in args.drivers.split(","):
        peer_default = med.get((f"pgqueuer-{driver}", "batch 10"))
        if defaults and peer_default:
            ratios[f"ThinWorker defaults/pgqueuer-{driver} defaults"] = defaults / peer_default
            rounds = per_round(
                [("pgq-thin ThinWorker", "defaults")], [(f"pgqueuer-{driver}", "batch 10")]
            )
            lines.append(
                f"ThinWorker defaults / PgQueuer {driver} defaults (batch 10): "
                f"{defaults / peer_default:.2f}x{rounds}"
            )
    ours = best("pgq-thin ThinWorker")
    floor = best("pgq-thin sql-loop")
    peer = best("pgqueuer-asyncpg")
    peer_all = best("pgqueuer")
    for name, mine in (("ThinWorker", ours), ("sql-loop", floor)):
        if mine is None:
            continue
        if peer_all:
            ratios[f"{name}/pgqueuer_best"] = mine[0] / peer_all[0]
            prefix = "pgq-thin ThinWorker" if name == "ThinWorker" else "pgq-thin sql-loop"
            rounds = per_round(
                [k for k in runs if k[0].startswith(prefix)],
                [k for k in runs if k[0].startswith("pgqueuer")],
            )
            lines.append(
                f"{name} best ({mine[1]}) / PgQueuer best ({peer_all[1]}): "
                f"{mine[0] / peer_all[0]:.2f}x{rounds}"
            )
        if ceil:
            ratios[f"{name}/sql_ceiling"] = mine[0] / ceil
            lines.append(f"{name} best / SQL ceiling: {mine[0] / ceil:.2f}x")
    if lines:
        print("\n" + "\n".join(lines))
    path = common.write_json(
        "drain",
        {
            "args": vars(args),
            "machine": common.server_info(args.dsn),
            "runs": [
                {
                    "system": s,
                    "setting": st,
                    "runs": runs[(s, st)],
                    "median_jobs_per_s": med[(s, st)],
                }
                for s, st, _, _ in todo
            ],
            "ceiling": ceiling,
            "ratios": ratios,
            "pgqueuer_asyncpg_best": peer,
        },
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


def report_states(
    args: argparse.Namespace,
    states: list[str],
    jobs_of: dict[str, int],
    every: list[tuple[str, str, str, str, list[str]]],
) -> None:
    """Every (state, system, setting) --repeat times, ABBA over the whole list; one table with a
    column per state, the ratios to the analyzed state and to PgQueuer in the same state."""
    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = {
        (state, system, setting): [] for state, system, setting, _, _ in every
    }
    for rnd in range(args.repeat):
        for state, system, setting, kind, agent_args in every if rnd % 2 == 0 else every[::-1]:
            jobs = jobs_of.get(state, args.jobs)
            r = run_one(args.dsn, kind, agent_args, jobs, args.processes, args.timeout, state)
            runs[(state, system, setting)].append(r)
            turns = f" ({r['ring_turns']} ring turns)" if "ring_turns" in r else ""
            print(
                f"  [{rnd + 1}/{args.repeat}] {state}: {system} {setting}: "
                f"{r['jobs_per_s']:,.0f} jobs/s{turns}",
                file=sys.stderr,
                flush=True,
            )
    med = {k: statistics.median(r["jobs_per_s"] for r in v) for k, v in runs.items()}
    configs = list(dict.fromkeys((system, setting) for _, system, setting, _, _ in every))
    rows = []
    for system, setting in configs:
        row: list[Any] = [system, setting]
        for state in states:
            v = med.get((state, system, setting))
            base = med.get(("analyzed", system, setting))
            ratio = f" ({v / base:.2f}x)" if v and base and state != "analyzed" else ""
            row.append(f"{v:,.0f}{ratio}" if v else "")
        rows.append(row)
    names = {
        "analyzed": "analyzed",
        "none": "no ANALYZE",
        "burst": f"idle, then burst of {args.burst:,}",
        "produce": f"producer, {args.produce:,}",
    }
    print(
        f"\nDrain jobs/s by statistics state (backlog {args.jobs:,}; median of {args.repeat};"
        f" in brackets: / the analyzed figure of the same setting)\n"
    )
    print(common.table(["system", "setting", *[names[s] for s in states]], rows))

    def best(state: str, prefix: str) -> float:
        return max(
            (v for (st, sy, _), v in med.items() if st == state and sy.startswith(prefix)),
            default=0.0,
        )

    lines = []
    ratios: dict[str, float] = {}
    for state in states:
        mine, peer = best(state, "pgq-thin ThinWorker"), best(state, "pgqueuer")
        d_mine = med.get((state, "pgq-thin ThinWorker", "defaults"))
        d_peer = med.get((state, "pgqueuer-asyncpg", "batch 10"))
        parts = []
        if mine and peer:
            ratios[f"{state}: best/pgqueuer best"] = mine / peer
            parts.append(f"best {mine / peer:.2f}x PgQueuer's best")
        if d_mine and d_peer:
            ratios[f"{state}: defaults/pgqueuer defaults"] = d_mine / d_peer
            parts.append(f"defaults {d_mine / d_peer:.2f}x PgQueuer's defaults")
        if parts:
            lines.append(f"{names[state]}: " + ", ".join(parts))
    if lines:
        print("\n" + "\n".join(lines))
    path = common.write_json(
        "drain-states",
        {
            "args": vars(args),
            "machine": common.server_info(args.dsn),
            "runs": [
                {
                    "state": state,
                    "system": system,
                    "setting": setting,
                    "runs": runs[(state, system, setting)],
                    "median_jobs_per_s": med[(state, system, setting)],
                }
                for state, system, setting, _, _ in every
            ],
            "ratios": ratios,
        },
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
