"""Drain throughput at a backlog of 10,000 and of 1,000,000 queued jobs; size of pgq.jobs.

Usage: python benchmarks/backlog.py [--dsn DSN] [--backlogs 10000,1000000] [--drain-jobs 5000]
                                    [--repeat 3] [--full-drain]

Per backlog: a fresh scratch database, the backlog filled with pgq.enqueue_many in batches of
50,000, VACUUM (ANALYZE). Then --repeat rounds of: top the backlog up to its size again
(enqueue_many), measure a ThinWorker (batch 100, concurrency 100) draining --drain-jobs jobs,
top up, measure the bare SQL loop (batch 100) draining --drain-jobs jobs. jobs/s = finished
jobs / (last completion - first handler start), medians reported. The drain size is kept
below half the smallest backlog so every measurement runs against (almost) the full backlog.

Size, index size, live and dead tuples of pgq.jobs (summed over its partitions;
pg_stat_user_tables, autovacuum at the server's defaults) are read after the fill and after
the rounds; with --full-drain the ThinWorker then drains the whole backlog and they are read
once more (the bloat check).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import common
import psycopg
import sql_ceiling

# pgq.jobs is partitioned (no storage of its own): sizes and counters are summed over its leaves.
SIZES = """
SELECT sum(pg_relation_size(s.relid))::bigint AS table_bytes,
       sum(pg_indexes_size(s.relid))::bigint AS index_bytes,
       sum(pg_total_relation_size(s.relid))::bigint AS total_bytes,
       sum(s.n_live_tup)::bigint AS n_live_tup, sum(s.n_dead_tup)::bigint AS n_dead_tup,
       sum(s.autovacuum_count)::bigint AS autovacuum_count,
       sum(s.autoanalyze_count)::bigint AS autoanalyze_count,
       (SELECT count(*) FROM pgq.jobs) AS rows_now,
       pg_total_relation_size('pgq.job_history') AS history_bytes
  FROM pg_stat_user_tables s
 WHERE s.relid IN (SELECT relid FROM pg_partition_tree('pgq.jobs') WHERE isleaf)
"""

RUNNERS = {
    "pgq-thin ThinWorker (batch 100, concurrency 100)": [
        "drain-worker",
        "--batch",
        "100",
        "--concurrency",
        "100",
    ],
    "pgq-thin sql-loop (batch 100)": ["drain-sql", "--batch", "100"],
}


def sizes(db: str) -> dict[str, Any]:
    time.sleep(1.0)  # let backends flush their table statistics (PostgreSQL 15 batches them)
    with psycopg.connect(db, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_clear_snapshot()")
        cur = conn.execute(SIZES)
        row = cur.fetchone()
        assert row is not None and cur.description is not None
        return {d.name: v for d, v in zip(cur.description, row, strict=True)}


def queued(db: str) -> int:
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT count(*) FROM pgq.jobs WHERE status = 'queued'").fetchone()
    return int(row[0]) if row else 0


def history_since(db: str, mark: Any) -> tuple[int, float]:
    """(jobs finished by attempts started at or after mark, epoch of the last completion)."""
    with psycopg.connect(db) as conn:
        row = conn.execute(
            "SELECT count(*), extract(epoch FROM max(finished_at))::float8 FROM pgq.job_history"
            " WHERE status = 'successful' AND started_at >= %s",
            (mark,),
        ).fetchone()
    assert row is not None
    return int(row[0]), float(row[1] or 0.0)


def drain_once(db: str, args: list[str], jobs: int, timeout: float) -> dict[str, Any]:
    with psycopg.connect(db) as conn:
        row = conn.execute("SELECT now()").fetchone()
    assert row is not None
    res = common.run_agents(
        [
            common.agent(
                "thin", *args, "--dsn", db, "--max-jobs", str(jobs), "--timeout", str(timeout)
            )
        ],
        timeout + 30,
    )[0]
    count, last = history_since(db, row[0])
    seconds = last - res["first_start_ns"] / 1e9
    return {"jobs": count, "seconds": seconds, "jobs_per_s": count / seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--backlogs", default="10000,1000000")
    parser.add_argument("--drain-jobs", type=int, default=5000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--full-drain", action="store_true")
    parser.add_argument("--timeout", type=float, default=900.0)
    args = parser.parse_args()
    common.check_local(args.dsn)
    backlogs = [int(b) for b in args.backlogs.split(",")]
    if args.drain_jobs * 2 > min(backlogs):
        raise SystemExit("--drain-jobs must be at most half the smallest backlog")
    out: list[dict[str, Any]] = []
    for backlog in backlogs:
        with common.scratch_db(args.dsn, "backlog") as db:
            common.install_pgq(db)
            t0 = time.perf_counter()
            sql_ceiling.fill_pgq(db, backlog)
            fill_s = time.perf_counter() - t0
            before = sizes(db)
            print(f"  backlog {backlog:,}: filled in {fill_s:.1f} s", file=sys.stderr, flush=True)
            runs: dict[str, list[dict[str, Any]]] = {k: [] for k in RUNNERS}
            for rnd in range(args.repeat):
                for label, agent_args in RUNNERS.items():
                    missing = backlog - queued(db)
                    if missing > 0:
                        sql_ceiling.fill_pgq(db, missing)
                    r = drain_once(db, agent_args, args.drain_jobs, args.timeout)
                    runs[label].append(r)
                    print(
                        f"  [{rnd + 1}/{args.repeat}] backlog {backlog:,} {label}: "
                        f"{r['jobs_per_s']:,.0f} jobs/s",
                        file=sys.stderr,
                        flush=True,
                    )
            after = sizes(db)
            full = None
            if args.full_drain:
                t0 = time.perf_counter()
                common.run_agents(
                    [
                        common.agent(
                            "thin",
                            *RUNNERS[next(iter(RUNNERS))],
                            "--dsn",
                            db,
                            "--timeout",
                            str(args.timeout),
                        )
                    ],
                    args.timeout + 30,
                )
                full = {"seconds": time.perf_counter() - t0, "sizes": sizes(db)}
                print(
                    f"  backlog {backlog:,}: full drain in {full['seconds']:.0f} s",
                    file=sys.stderr,
                    flush=True,
                )
        out.append(
            {
                "backlog": backlog,
                "fill_seconds": fill_s,
                "before": before,
                "after": after,
                "full_drain": full,
                "runs": runs,
                "median": {
                    k: statistics.median(r["jobs_per_s"] for r in v) for k, v in runs.items()
                },
            }
        )

    print(
        f"\nDrain throughput by backlog ({args.drain_jobs:,} jobs per measurement, "
        f"median of {args.repeat})\n"
    )
    rows = [[o["backlog"], label, o["median"][label]] for o in out for label in RUNNERS]
    print(common.table(["backlog", "runner", "jobs/s"], rows))
    ratios = {}
    if len(out) >= 2:
        lo, hi = out[0], out[-1]
        for label in RUNNERS:
            ratios[label] = hi["median"][label] / lo["median"][label]
            print(f"\n{label}: {hi['backlog']:,} / {lo['backlog']:,} = {ratios[label]:.2f}x")
    mib = 1024 * 1024
    srows = []
    for o in out:
        stages = [("after fill", o["before"]), ("after rounds", o["after"])]
        if o["full_drain"]:
            stages.append(("after full drain", o["full_drain"]["sizes"]))
        for stage, s in stages:
            srows.append(
                [
                    o["backlog"],
                    stage,
                    s["rows_now"],
                    s["table_bytes"] / mib,
                    s["index_bytes"] / mib,
                    s["n_live_tup"],
                    s["n_dead_tup"],
                    s["autovacuum_count"],
                ]
            )
    print("\npgq.jobs size\n")
    print(
        common.table(
            [
                "backlog",
                "when",
                "rows",
                "table MiB",
                "indexes MiB",
                "n_live_tup",
                "n_dead_tup",
                "autovacuums",
            ],
            srows,
        )
    )
    path = common.write_json(
        "backlog",
        {
            "args": vars(args),
            "machine": common.server_info(args.dsn),
            "backlogs": out,
            "ratios": ratios,
        },
    )
    print(f"\nJSON: {path.relative_to(common.ROOT)}")


if __name__ == "__main__":
    main()
