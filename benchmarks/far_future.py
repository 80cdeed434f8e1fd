"""Claims with far-future jobs: does a backlog of not-yet-due jobs slow the claim of due ones?

One entrypoint. Each round enqueues one due job (priority 0), claims it with ``pgq.claim`` and
completes it; the claim is timed on the client (round trip on a local connection, one
statement in autocommit). Two scratch databases: one with no other job, one where
``--backlog`` jobs of the highest priority (32767) due in ten years were added to the same
entrypoint. Rounds alternate between the two in blocks of 20, so that load from elsewhere on
the machine weighs on both alike. Before the fix the claim walked every not-yet-due job of
higher priority.

    python -m benchmarks.far_future [--dsn DSN] [--backlog 1000000] [--rounds 300]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import psycopg

from benchmarks.common import DEFAULT_DSN, check_local, install_pgq, scratch_db, table

EP = "ff.work"
WORKER = uuid.UUID("00000000-0000-0000-0000-0000000000ff")


def claim_times(conn: psycopg.Connection[object], rounds: int) -> list[float]:
    """Milliseconds per claim of one due job."""
    times = []
    for _ in range(rounds):
        conn.execute("SELECT pgq.enqueue(%s)", (EP,))
        began = time.perf_counter()
        rows = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], 1)", (WORKER, EP)
        ).fetchall()
        times.append((time.perf_counter() - began) * 1000)
        assert len(rows) == 1, rows
        conn.execute(
            "SELECT count(*) FROM pgq.complete(%s, %s, %s, '{successful}')",
            (WORKER, [rows[0][0]], [rows[0][1]]),
        )
    return times


def add_backlog(conn: psycopg.Connection[object], n: int) -> float:
    began = time.perf_counter()
    chunk = 50_000
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[%s]),"
            " priorities => array_fill(32767, ARRAY[%s]),"
            " delays => array_fill(interval '10 years', ARRAY[%s]))",
            (EP, k, k, k),
        )
    conn.execute("VACUUM ANALYZE pgq.jobs")
    return time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=DEFAULT_DSN)
    parser.add_argument("--backlog", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=300)
    args = parser.parse_args()
    check_local(args.dsn)
    empty: list[float] = []
    loaded: list[float] = []
    with (
        scratch_db(args.dsn, "far_future_empty") as empty_dsn,
        scratch_db(args.dsn, "far_future_backlog") as backlog_dsn,
    ):
        install_pgq(empty_dsn)
        install_pgq(backlog_dsn)
        with (
            psycopg.connect(empty_dsn, autocommit=True) as a,
            psycopg.connect(backlog_dsn, autocommit=True) as b,
        ):
            load_s = add_backlog(b, args.backlog)
            claim_times(a, 50)  # warm up
            claim_times(b, 50)
            for _ in range(max(1, args.rounds // 20)):
                empty += claim_times(a, 20)
                loaded += claim_times(b, 20)
            version = a.execute("SHOW server_version").fetchone()
    rows = []
    for name, ms in (("empty", empty), (f"{args.backlog:,} far-future, priority 32767", loaded)):
        q = statistics.quantiles(ms, n=100)
        rows.append([name, f"{statistics.median(ms):.3f}", f"{q[94]:.3f}", f"{q[98]:.3f}"])
    print(f"PostgreSQL {version[0] if version else '?'}; backlog added in {load_s:.0f} s")
    print(table(["claim of one due job", "p50 ms", "p95 ms", "p99 ms"], rows))
    ratio = statistics.median(loaded) / statistics.median(empty)
    print(f"p50 ratio with the backlog: {ratio:.2f}x")


if __name__ == "__main__":
    main()
