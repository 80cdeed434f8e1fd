"""What rate limits cost a claim: server time per claimed job of an entrypoint without limits,
with a rate limit for the whole entrypoint, and with a rate limit per group key over 10,000 keys
(and, for reference, a key concurrency limit over the same keys).

Usage: python benchmarks/rate_claims.py [--dsn DSN] [--jobs 20000] [--claims 400]
                                        [--batches 1,10] [--rounds 3]

As benchmarks/keyed_claims.py (its claim timing and loop): per scenario --jobs queued jobs,
then --claims claims of `batch` jobs, each completed, one session, median server time per
claimed job over --rounds interleaved rounds. The rate limits never bind (1,000,000 per
10 minutes), so every claim is full and the figure is the limit's bookkeeping: the count of the
window's starts (one entry per earlier claim of the run: up to --claims) and the row each claim
records. Prints one table; docs/performance.md ("Flow control") has the figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import psycopg
from keyed_claims import run_claims, scenario

CASES: list[tuple[str, int | None, str | None]] = [
    ("no limits", None, None),
    ("rate limit", None, "rate_limit => 1000000, rate_period => '10 minutes'"),
    ("rate limit per key, 10,000 keys", 10_000,
     "rate_limit => 1000000, rate_period => '10 minutes', rate_per_key => true"),
    ("key limit, 10,000 keys", 10_000, "key_concurrency_limit => 1000000"),
]  # fmt: skip


def prepare(conn: psycopg.Connection[Any], name: str, keys: int | None, policy: str | None,
            jobs: int) -> None:  # fmt: skip
    if policy is not None:
        conn.execute(f"SELECT pgq.configure(%s, {policy})", (name,))
    scenario(conn, name, None, jobs) if keys is None else _keyed(conn, name, keys, jobs)


def _keyed(conn: psycopg.Connection[Any], name: str, keys: int, jobs: int) -> None:
    # keyed_claims.scenario sets a key limit when given keys: enqueue the keys without it.
    for start in range(0, jobs, 10_000):
        n = min(10_000, jobs - start)
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[%s]), group_keys =>"
            " ARRAY(SELECT 'key-' || ((g + %s) %% %s) FROM generate_series(1, %s) g))",
            (name, n, start, keys, n),
        )
    conn.execute("ANALYZE pgq.jobs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--claims", type=int, default=400)
    parser.add_argument("--batches", default="1,10")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    common.check_local(args.dsn)
    batches = [int(b) for b in args.batches.split(",")]
    results: dict[tuple[str, int], list[float]] = {}
    with common.scratch_db(args.dsn, "rated") as db:
        common.install_pgq(db)
        with psycopg.connect(db, autocommit=True) as conn:
            for r in range(args.rounds):
                for batch in batches:
                    for i, (label, keys, policy) in enumerate(CASES):
                        name = f"bench_{r}_{batch}_{i}"
                        prepare(conn, name, keys, policy, args.jobs)
                        us = run_claims(conn, name, batch, args.claims)
                        results.setdefault((label, batch), []).append(us)
                        conn.execute("SELECT pgq.maintain()")
    rows = []
    for batch in batches:
        base = statistics.median(results[("no limits", batch)])
        for label, _, _ in CASES:
            us = statistics.median(results[(label, batch)])
            rows.append([label, batch, f"{us:.0f}", f"{us / base:.2f}x"])
    print(
        f"claim server time per job, median of {args.rounds} rounds of {args.claims} claims, "
        f"{args.jobs} jobs queued per scenario"
    )
    print(common.table(["entrypoint", "batch", "us per job", "vs no limits"], rows))


if __name__ == "__main__":
    main()
