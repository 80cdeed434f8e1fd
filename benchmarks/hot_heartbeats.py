"""Share of heartbeat updates that PostgreSQL performs as HOT updates.

Usage: python benchmarks/hot_heartbeats.py [--dsn DSN] [--jobs 1000] [--rounds 10]

Creates a scratch database next to the one the DSN names, installs pgq, claims --jobs jobs,
sends --rounds heartbeat calls for all of them (one call each, as ThinWorker does, each its own
transaction), and prints n_tup_upd and n_tup_hot_upd of pgq.jobs (summed over its partitions) for
those calls from pg_stat_user_tables. Target: at least 90 % HOT.
"""

from __future__ import annotations

import argparse
import os
import uuid

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from pgq_thin import migrate

# pgq.jobs is partitioned (a ring of slots): its statistics are those of its partitions.
STATS = (
    "SELECT sum(s.n_tup_upd)::bigint, sum(s.n_tup_hot_upd)::bigint"
    " FROM pg_partition_tree('pgq.jobs') t JOIN pg_stat_user_tables s ON s.relid = t.relid"
)


def measure(dsn: str, jobs: int, rounds: int) -> tuple[int, int]:
    """Return (updates, hot updates) of pgq.jobs caused by the heartbeat rounds."""
    worker = uuid.uuid4()
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pgq.enqueue_many(array_fill('hot'::text, ARRAY[%s]), "
            '(SELECT jsonb_agg(\'{"to": "someone@example.com", "n": 42}\'::jsonb)'
            " FROM generate_series(1, %s)))",
            (jobs, jobs),
        )
        claimed = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['hot'], %s)", (worker, jobs)
        ).fetchall()
        ids = [c[0] for c in claimed]
        leases = [c[1] for c in claimed]
        conn.execute("SELECT pg_stat_force_next_flush()")
        before = conn.execute(STATS).fetchone()
        for _ in range(rounds):
            states = conn.execute(
                "SELECT state FROM pgq.heartbeat(%s, %s, %s)", (worker, ids, leases)
            ).fetchall()
            assert all(s[0] == "ok" for s in states)
        conn.execute("SELECT pg_stat_force_next_flush()")
        after = conn.execute(STATS).fetchone()
    assert before is not None and after is not None
    return after[0] - before[0], after[1] - before[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--dsn", default=os.environ.get("PGQ_DSN", "postgresql://postgres@127.0.0.1:5432/postgres")
    )
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    args = parser.parse_args()
    scratch = f"pgq_bench_hot_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(args.dsn, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{scratch}"')
        version = admin.execute("SHOW server_version").fetchone()
    try:
        dsn = make_conninfo(**{**conninfo_to_dict(args.dsn), "dbname": scratch})
        migrate.upgrade(dsn)
        updates, hot = measure(dsn, args.jobs, args.rounds)
    finally:
        with psycopg.connect(args.dsn, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')
    server = version[0] if version else "?"
    print(f"PostgreSQL {server}: {args.rounds} heartbeat calls x {args.jobs} jobs")
    print(f"updates {updates}  hot {hot}  HOT ratio {100.0 * hot / updates:.1f} %")


if __name__ == "__main__":
    main()
