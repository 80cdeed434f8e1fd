"""A burst of scheduled jobs coming due at once: what does promoting them cost each claim?

Jobs enqueued with a delay (or retried after one) wait in jobs_scheduled; a claim first promotes
up to 1,000 due jobs of its entrypoints, and ``pgq.maintain`` up to 10,000 of every entrypoint.
Here ``--due`` jobs of one entrypoint come due together (enqueued with a delay of one minute,
claimed with a claim clock two minutes on), and one connection claims them ``--batch`` at a
time and completes each batch, until all ran; every claim is timed on the client. Then the
same number comes due again, with ``--later`` more jobs of the entrypoint scheduled a day on,
and one ``pgq.maintain`` call (with the same clock) is timed: the jobs it promotes, and how
long it took. One scratch database; PostgreSQL as found.

    python -m benchmarks.due_burst [--dsn DSN] [--due 200000] [--batch 100] [--later 200000]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid

import psycopg

from benchmarks.common import DEFAULT_DSN, check_local, install_pgq, scratch_db, table

EP = "due.burst"
WORKER = uuid.UUID("00000000-0000-0000-0000-0000000000db")
CLOCK = "now() + interval '2 minutes'"


def schedule(conn: psycopg.Connection[object], n: int, delay: str) -> None:
    chunk = 50_000
    for start in range(0, n, chunk):
        k = min(chunk, n - start)
        conn.execute(
            "SELECT count(*) FROM pgq.enqueue_many(array_fill(%s::text, ARRAY[%s]),"
            " delays => array_fill(%s::interval, ARRAY[%s]))",
            (EP, k, delay, k),
        )


def drain(conn: psycopg.Connection[object], n: int, batch: int) -> tuple[list[float], float]:
    """Milliseconds per claim, and the seconds the whole drain took."""
    times: list[float] = []
    done = 0
    began = time.perf_counter()
    while done < n:
        t = time.perf_counter()
        rows = conn.execute(
            f"SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], %s, {CLOCK})", (WORKER, EP, batch)
        ).fetchall()
        times.append((time.perf_counter() - t) * 1000)
        if not rows:
            raise SystemExit(f"a claim came back empty after {done} of {n} jobs")
        ids, leases = [r[0] for r in rows], [r[1] for r in rows]
        conn.execute(
            "SELECT count(*) FROM pgq.complete(%s, %s, %s,"
            " array_fill('successful'::text, ARRAY[%s]))",
            (WORKER, ids, leases, len(ids)),
        )
        done += len(ids)
    return times, time.perf_counter() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dsn", default=DEFAULT_DSN)
    parser.add_argument("--due", type=int, default=200_000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--later", type=int, default=200_000)
    args = parser.parse_args()
    check_local(args.dsn)
    with scratch_db(args.dsn, "due_burst") as dsn:
        install_pgq(dsn)
        with psycopg.connect(dsn, autocommit=True) as conn:
            schedule(conn, args.due, "1 minute")
            conn.execute("VACUUM ANALYZE pgq.jobs")
            claims, seconds = drain(conn, args.due, args.batch)
            schedule(conn, args.due, "1 minute")
            schedule(conn, args.later, "1 day")
            conn.execute("VACUUM ANALYZE pgq.jobs")
            t = time.perf_counter()
            row = conn.execute(f"SELECT promoted FROM pgq.maintain({CLOCK})").fetchone()
            maintain_ms = (time.perf_counter() - t) * 1000
            version = conn.execute("SHOW server_version").fetchone()
    q = statistics.quantiles(claims, n=100)
    print(f"PostgreSQL {version[0] if version else '?'}; {args.due:,} jobs due at once")
    print(
        table(
            ["claims of " + str(args.batch), "drain s", "jobs/s", "p50 ms", "p99 ms", "max ms"],
            [
                [
                    f"{len(claims):,}",
                    f"{seconds:.1f}",
                    f"{args.due / seconds:,.0f}",
                    f"{statistics.median(claims):.2f}",
                    f"{q[98]:.2f}",
                    f"{max(claims):.2f}",
                ]
            ],
        )
    )
    promoted = row[0] if row else None
    print(
        f"pgq.maintain with {args.due:,} due and {args.later:,} scheduled a day on:"
        f" promoted {promoted:,} in {maintain_ms:.0f} ms"
    )


if __name__ == "__main__":
    main()
