"""What per-key limits and fair share cost a claim: server time per claimed job of an
entrypoint without limits, and of one with a key_concurrency_limit whose backlog spreads over
1, 100 and 10,000 distinct group keys.

Usage: python benchmarks/keyed_claims.py [--dsn DSN] [--jobs 20000] [--claims 400]
                                         [--batches 1,10] [--rounds 3]

In a scratch database, per scenario: --jobs queued jobs (enqueue_many), then --claims claims of
`batch` jobs, each followed by its complete (as a worker does), one session. The figure is the
median, over --rounds rounds (scenarios interleaved, so a busy neighbour hits them alike), of
the server time of the claim calls (clock_timestamp() around pgq.claim inside one DO block per
claim: no network, no client), divided by the jobs it claimed. The key limit is high
(1,000,000) so every claim is full: the cost is the keyed path itself (fair share walk, counts).
Prints one table; docs/performance.md ("Flow control") has the figures.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import uuid
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import common
import psycopg

CLAIM_TIMED = """
SELECT s.t, s.ids, s.leases FROM (
    SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint AS t0
) z, LATERAL (
    SELECT (extract(epoch FROM clock_timestamp()) * 1e6)::bigint - z.t0 AS t,
           array_agg(c.id) AS ids, array_agg(c.lease) AS leases
      FROM pgq.claim(%s, ARRAY[%s], %s) c
) s"""


def scenario(conn: psycopg.Connection[Any], name: str, keys: int | None, jobs: int) -> None:
    if keys is not None:
        conn.execute("SELECT pgq.configure(%s, key_concurrency_limit => 1000000)", (name,))
    for start in range(0, jobs, 10_000):
        n = min(10_000, jobs - start)
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[%s]), group_keys =>"
            " CASE WHEN %s::int IS NULL THEN NULL ELSE"
            " ARRAY(SELECT 'key-' || ((g + %s) %% %s::int) FROM generate_series(1, %s) g) END)",
            (name, n, keys, start, keys or 1, n),
        )
    conn.execute("ANALYZE pgq.jobs")


def run_claims(conn: psycopg.Connection[Any], name: str, batch: int, claims: int) -> float:
    """Median server microseconds per claimed job over `claims` claims (each completed)."""
    wid = uuid.uuid4()
    per_job: list[float] = []
    for _ in range(claims):
        row = conn.execute(CLAIM_TIMED, (wid, name, batch)).fetchone()
        assert row is not None
        t, ids, leases = row
        if not ids:
            break
        per_job.append(t / len(ids))
        conn.execute(
            "SELECT pgq.complete(%s, %s, %s, array_fill('successful'::text, ARRAY[%s]))",
            (wid, ids, leases, len(ids)),
        )
    return statistics.median(per_job) if per_job else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=common.DEFAULT_DSN)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--claims", type=int, default=400)
    parser.add_argument("--batches", default="1,10")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    common.check_local(args.dsn)
    cases: list[tuple[str, int | None]] = [
        ("no limits", None),
        ("key limit, 1 key", 1),
        ("key limit, 100 keys", 100),
        ("key limit, 10,000 keys", 10_000),
    ]
    batches = [int(b) for b in args.batches.split(",")]
    results: dict[tuple[str, int], list[float]] = {}
    with common.scratch_db(args.dsn, "keyed") as db:
        common.install_pgq(db)
        with psycopg.connect(db, autocommit=True) as conn:
            for r in range(args.rounds):
                for batch in batches:
                    for label, keys in cases:
                        name = f"bench_{r}_{batch}_{keys or 0}"
                        scenario(conn, name, keys, args.jobs)
                        us = run_claims(conn, name, batch, args.claims)
                        results.setdefault((label, batch), []).append(us)
                        conn.execute("SELECT pgq.maintain()")
    rows = []
    for batch in batches:
        base = statistics.median(results[("no limits", batch)])
        for label, _ in cases:
            us = statistics.median(results[(label, batch)])
            rows.append([label, batch, f"{us:.0f}", f"{us / base:.2f}x"])
    print(
        f"claim server time per job, median of {args.rounds} rounds of {args.claims} claims, "
        f"{args.jobs} jobs queued per scenario"
    )
    print(common.table(["entrypoint", "batch", "us per job", "vs no limits"], rows))


if __name__ == "__main__":
    main()
