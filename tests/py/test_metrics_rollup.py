"""The metrics rollup under concurrency: every finished job counted exactly once.

Real sessions on a real server: workers drain jobs (some fail, some retry, some are canceled)
while several scrapers call ``pgq.metrics()`` and ``pgq.rollup_metrics()`` at the same time; a
transaction that finished jobs but has not committed yet holds the rollup back without losing
or double-counting anything; a second rollup caller never waits for the first.
"""

from __future__ import annotations

import threading
import uuid
from collections import Counter
from typing import Any

import psycopg
from helpers.wait import wait_for
from psycopg.types.json import Jsonb
from test_sql_concurrency import connect, enqueue_n, run_threads


def history_counts(conn: psycopg.Connection[Any]) -> Counter[tuple[str, str]]:
    rows = conn.execute(
        "SELECT entrypoint, status, count(*) FROM pgq.job_history GROUP BY 1, 2"
    ).fetchall()
    return Counter({(ep, st): n for ep, st, n in rows})


def totals(conn: psycopg.Connection[Any]) -> Counter[tuple[str, str]]:
    rows = conn.execute("SELECT entrypoint, status, jobs FROM pgq.metrics_totals").fetchall()
    return Counter({(ep, st): n for ep, st, n in rows if n})


def bucket_counts(conn: psycopg.Connection[Any]) -> Counter[tuple[str, str]]:
    row = conn.execute(
        "SELECT entrypoint, sum(successful), sum(failed), sum(canceled) FROM pgq.metrics_buckets"
        " GROUP BY entrypoint"
    ).fetchall()
    out: Counter[tuple[str, str]] = Counter()
    for ep, s, f, c in row:
        for status, n in (("successful", s), ("failed", f), ("canceled", c)):
            if n:
                out[(ep, status)] = int(n)
    return out


def roll_until(conn: psycopg.Connection[Any], expected: Counter[tuple[str, str]]) -> None:
    """Call the rollup until its totals reach the history's counts (another session of the
    cluster may hold the horizon for a moment), with a deadline."""

    def caught_up() -> bool:
        conn.execute("SELECT * FROM pgq.rollup_metrics()")
        return totals(conn) == expected

    wait_for(caught_up, timeout=60, what="the rollup to count every finished job")


def test_concurrent_drain_and_scrapers_count_every_job_once(pgq_dsn: str) -> None:
    """4 workers drain 6,000 jobs of two entrypoints (every 7th fails once and is retried,
    every 11th fails for good, every 13th is canceled while queued) while 3 scrapers read
    pgq.metrics() and call pgq.rollup_metrics() in a loop. Afterwards the totals and the
    buckets equal the history exactly: nothing lost, nothing counted twice."""
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.configure('mr.a', max_attempts => 2, backoff_base => '0')")
        conn.execute("SELECT pgq.configure('mr.b', max_attempts => 1)")
        ids = enqueue_n(conn, "mr.a", 4000) + enqueue_n(conn, "mr.b", 2000)
        canceled = [i for i in ids if i % 13 == 0]
        conn.execute("SELECT pgq.cancel(%s)", (canceled,))
    draining = threading.Event()
    scrapes: Counter[str] = Counter()
    lock = threading.Lock()

    def worker(i: int) -> None:
        me = uuid.uuid4()
        with connect(pgq_dsn) as conn:
            while True:
                rows = conn.execute(
                    "SELECT id, lease, attempt FROM pgq.claim(%s, ARRAY['mr.a', 'mr.b'], 50)", (me,)
                ).fetchall()
                if not rows:
                    if not conn.execute(
                        "SELECT 1 FROM pgq.jobs WHERE entrypoint LIKE 'mr.%%' LIMIT 1"
                    ).fetchone():
                        return
                    continue
                statuses = [
                    "failed" if jid % 11 == 0 or (jid % 7 == 0 and attempt == 1) else "successful"
                    for jid, _, attempt in rows
                ]
                conn.execute(
                    "SELECT pgq.complete(%s, %s, %s, %s, %s)",
                    (
                        me,
                        [r[0] for r in rows],
                        [r[1] for r in rows],
                        statuses,
                        Jsonb([{"error": "E"} if s == "failed" else None for s in statuses]),
                    ),
                )

    errors: list[BaseException] = []

    def scraper(i: int) -> None:
        try:
            scrape(i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def scrape(i: int) -> None:
        with connect(pgq_dsn) as conn:
            while draining.is_set():
                if i == 0:
                    rolled, _, busy = conn.execute(
                        "SELECT * FROM pgq.rollup_metrics(max_rows => 500)"
                    ).fetchone()
                    key = "busy" if busy else ("rolled" if rolled else "idle")
                else:
                    conn.execute("SELECT * FROM pgq.metrics()").fetchall()
                    key = "metrics"
                with lock:
                    scrapes[key] += 1

    draining.set()
    scrapers = [threading.Thread(target=scraper, args=(i,)) for i in range(3)]
    for t in scrapers:
        t.start()
    try:
        run_threads(4, worker)
    finally:
        draining.clear()
        for t in scrapers:
            t.join(timeout=60)
    assert not any(t.is_alive() for t in scrapers)
    assert not errors, errors
    with connect(pgq_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pgq.jobs").fetchone()[0] == 0
        expected = history_counts(conn)
        assert sum(expected.values()) == 6000
        assert expected[("mr.b", "failed")] > 0 and expected[("mr.a", "failed")] > 0
        roll_until(conn, expected)
        assert totals(conn) == expected
        assert bucket_counts(conn) == expected
        assert conn.execute("SELECT rows_rolled FROM pgq.metrics_state").fetchone()[0] == 6000
        metrics = {
            r[0]: r[1:]
            for r in conn.execute(
                "SELECT entrypoint, successful_total, failed_total, canceled_total, queued, running"
                " FROM pgq.metrics()"
            ).fetchall()
        }
    assert metrics["mr.a"] == (
        expected[("mr.a", "successful")],
        expected[("mr.a", "failed")],
        expected[("mr.a", "canceled")],
        0,
        0,
    )
    assert scrapes["metrics"] > 0 and scrapes["rolled"] > 0, scrapes


def test_an_open_transaction_holds_the_rollup_back_and_nothing_is_lost(pgq_dsn: str) -> None:
    """A completes jobs and stays open; B completes more and commits. The rollup counts
    neither B's (a later transaction) nor A's until A commits; then both, once."""
    me = uuid.uuid4()
    with connect(pgq_dsn) as conn:
        enqueue_n(conn, "mr.open", 30)
        jobs = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['mr.open'], 30)", (me,)
        ).fetchall()
        conn.execute("SELECT * FROM pgq.rollup_metrics()")

    def complete(conn: psycopg.Connection[Any], part: list[tuple[int, int]]) -> None:
        conn.execute(
            "SELECT pgq.complete(%s, %s, %s, %s)",
            (me, [j[0] for j in part], [j[1] for j in part], ["successful"] * len(part)),
        )

    with connect(pgq_dsn) as a, connect(pgq_dsn) as b, connect(pgq_dsn) as scraper:
        a.execute("BEGIN")
        complete(a, jobs[:10])
        complete(b, jobs[10:])  # autocommit: a later transaction, committed
        rolled, caught_up, busy = scraper.execute("SELECT * FROM pgq.rollup_metrics()").fetchone()
        assert (rolled, busy) == (0, False), "nothing may be counted past the open transaction"
        assert caught_up is True, "caught up to the horizon: the open transaction"
        assert totals(scraper)[("mr.open", "successful")] == 0
        a.execute("COMMIT")
        roll_until(scraper, Counter({("mr.open", "successful"): 30}))
        scraper.execute("SELECT * FROM pgq.rollup_metrics()")
        assert totals(scraper) == Counter({("mr.open", "successful"): 30})


def test_a_second_rollup_caller_never_waits(pgq_dsn: str) -> None:
    """While one transaction holds the rollup, another caller answers busy at once (no lock
    wait: lock_timeout would fail it) and pgq.metrics() still answers."""
    with connect(pgq_dsn) as holder, connect(pgq_dsn) as other:
        holder.execute("BEGIN")
        holder.execute("SELECT * FROM pgq.rollup_metrics()")
        other.execute("SET lock_timeout = '1s'")
        assert other.execute("SELECT * FROM pgq.rollup_metrics()").fetchone() == (0, False, True)
        assert other.execute("SELECT count(*) FROM pgq.metrics()").fetchone()[0] >= 0
        holder.execute("COMMIT")
        assert other.execute("SELECT busy FROM pgq.rollup_metrics()").fetchone()[0] is False
