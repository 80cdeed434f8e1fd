"""Rate limits against a real server, through real workers: no window of the period ever holds
more starts than the limit (read from ``pgq.job_history.started_at`` and the tokens taken
outside jobs), per key as for the whole entrypoint, and a limited worker sleeps until the next
start is allowed instead of claiming in a loop.

The workers run until every job finished (an event set by the handlers); nothing sleeps as
synchronisation. The application thread honours ``retry_at``, which is the behaviour under test.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime, timedelta
from typing import Any

import psycopg
import pytest

from pgq_thin import calls
from pgq_thin.admin import Admin
from pgq_thin.job import Job
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker


def most_in_a_window(starts: list[datetime], period: timedelta) -> int:
    """The largest number of starts in any half-open window [t, t + period)."""
    starts = sorted(starts)
    best, j = 0, 0
    for i, s in enumerate(starts):
        while starts[j] <= s - period:
            j += 1
        best = max(best, i - j + 1)
    return best


def test_most_in_a_window_counts_half_open_windows() -> None:
    t = datetime(2030, 1, 1)
    ms = timedelta(milliseconds=1)
    assert most_in_a_window([t, t + 999 * ms, t + 1000 * ms], timedelta(seconds=1)) == 2
    assert most_in_a_window([t, t + 500 * ms, t + 999 * ms], timedelta(seconds=1)) == 3


def run_workers(
    dsn: str, entrypoint: str, total: int, monkeypatch: pytest.MonkeyPatch, n: int = 4
) -> int:
    """Run n workers (threads) on entrypoint until `total` jobs finished; the number of claims
    they sent."""
    claims: list[int] = []
    finished: list[int] = []
    lock = threading.Lock()
    done = threading.Event()
    real = calls.aclaim

    async def counted(*args: Any) -> Any:
        with lock:
            claims.append(1)
        return await real(*args)

    monkeypatch.setattr(calls, "aclaim", counted)
    workers = []
    for _ in range(n):
        worker = ThinWorker(dsn, concurrency=20, batch_size=10, run_schedules=False)

        @worker.entrypoint(entrypoint)
        async def handle(job: Job[Any]) -> None:
            with lock:
                finished.append(job.id)
                if len(finished) >= total:
                    done.set()

        workers.append(worker)
    threads = [threading.Thread(target=w.run) for w in workers]
    for t in threads:
        t.start()
    try:
        assert done.wait(60), f"only {len(finished)} of {total} jobs finished within 60 s"
    finally:
        for w in workers:
            w.stop()
        for t in threads:
            t.join(30)
    return len(claims)


def starts_of(conn: psycopg.Connection[Any], entrypoint: str) -> list[tuple[str | None, datetime]]:
    rows = conn.execute(
        "SELECT group_key, started_at FROM pgq.job_history"
        " WHERE entrypoint = %s AND status = 'successful'",
        (entrypoint,),
    ).fetchall()
    return [(r[0], r[1]) for r in rows]


def test_four_workers_never_start_more_than_the_limit_in_any_window(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """60 jobs, 10 per 400 ms, 4 workers (batch 10) and an application thread taking 8 tokens
    one at a time, waiting for ``retry_at`` when refused: no window of 400 ms holds more than
    10 starts (jobs and tokens), the limit is reached, the drain takes about the windows the
    limit asks for, and the workers claim a few times per window (they sleep until the next
    start is allowed), not in a loop."""
    period = timedelta(milliseconds=400)
    with Admin(pgq_dsn) as admin, Queue(pgq_dsn) as queue:
        config = admin.configure("rl", rate_limit=10, rate_period=period)
        assert (config.rate_limit, config.rate_period) == (10, period)
        queue.enqueue_many("rl", [None] * 60)
    tokens: list[datetime] = []
    stop = threading.Event()

    def application() -> None:
        with psycopg.connect(pgq_dsn, autocommit=True) as conn, Queue(conn) as q:
            while not stop.is_set() and len(tokens) < 8:
                row = conn.execute("SELECT now()").fetchone()
                assert row is not None
                answer = q.take_tokens("rl", at=row[0])  # recorded at that time
                if answer.granted:
                    tokens.append(row[0])
                    assert answer.retry_at is None
                else:
                    assert answer.retry_at is not None and answer.remaining == 0
                    time.sleep(max(0.0, (answer.retry_at - row[0]).total_seconds()))

    app = threading.Thread(target=application)
    app.start()
    began = time.monotonic()
    try:
        claims = run_workers(pgq_dsn, "rl", 60, monkeypatch)
    finally:
        stop.set()
        app.join(30)
    elapsed = time.monotonic() - began
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        starts = [s for _, s in starts_of(conn, "rl")]
        ran = conn.execute(
            "SELECT count(*), count(DISTINCT id) FROM pgq.job_history WHERE entrypoint = 'rl'"
        ).fetchone()
    assert ran == (60, 60), "every job ran exactly once"
    assert most_in_a_window(starts + tokens, period) == 10
    assert len(tokens) == 8, "the application got its tokens too"
    windows = (60 + len(tokens)) // 10
    assert elapsed >= (windows - 1) * period.total_seconds()
    # 4 workers, each a few claims per window (the one that takes the budget, those that lost
    # the policy row to it, the claim after a full one): far from a loop (a worker claiming
    # without pause sends hundreds per second). Measured: 56 and 79 claims for 7 windows.
    assert claims <= 16 * (windows + 2), f"{claims} claims for {windows} windows"
    # Full pace: the drain takes about the windows the limit asks for (measured 2.5-2.9 s).
    # (a worker that lost the policy row waiting for its 5 s poll instead took 6.6 s).
    assert elapsed < (windows + 1) * period.total_seconds() + 3


def test_a_limit_per_key_holds_for_each_key(pgq_dsn: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """rate_per_key: 3 keys and jobs without a key, 5 per 300 ms each, 4 workers: no key (and not
    the jobs without one) starts more than 5 in any window, and the keys run side by side (the
    whole drain is bounded by one key's windows, not the sum)."""
    period = timedelta(milliseconds=300)
    with Admin(pgq_dsn) as admin, Queue(pgq_dsn) as queue:
        admin.configure("rk", rate_limit=5, rate_period=period, rate_per_key=True)
        keys: list[str | None] = ["a", "b", "c", None]
        queue.enqueue_many("rk", [None] * 80, group_keys=[keys[i % 4] for i in range(80)])
    began = time.monotonic()
    run_workers(pgq_dsn, "rk", 80, monkeypatch)
    elapsed = time.monotonic() - began
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        starts = starts_of(conn, "rk")
    assert len(starts) == 80
    for key in keys:
        of_key = [s for k, s in starts if k == key]
        assert len(of_key) == 20
        assert most_in_a_window(of_key, period) == 5, key
    assert most_in_a_window([s for _, s in starts], period) > 5, "the keys ran side by side"
    assert elapsed < 20 * 4 / 5 * period.total_seconds(), "not serialised across keys"


def test_notifications_of_a_used_up_budget_wake_no_claim(
    pgq_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker whose entrypoint used up its budget (5 per 3 s) gets 40 enqueue notifications (one
    statement per job) before the window moves: it claims nothing until the next start is allowed
    (pgq.rate_waits told it when), then drains the next 5 at once."""
    with Admin(pgq_dsn) as admin, Queue(pgq_dsn) as queue:
        admin.configure("rw", rate_limit=5, rate_period=timedelta(seconds=3))
        queue.enqueue_many("rw", [None] * 5)
    claims: list[int] = []
    started: list[int] = []
    lock = threading.Lock()
    first_five, sixth = threading.Event(), threading.Event()
    real = calls.aclaim

    async def counted(*args: Any) -> Any:
        with lock:
            claims.append(1)
        return await real(*args)

    monkeypatch.setattr(calls, "aclaim", counted)
    worker = ThinWorker(pgq_dsn, concurrency=10, batch_size=10, run_schedules=False)

    @worker.entrypoint("rw")
    async def handle(job: Job[Any]) -> None:
        with lock:
            started.append(job.id)
            if len(started) == 5:
                first_five.set()
            if len(started) == 6:
                sixth.set()

    thread = threading.Thread(target=worker.run)
    thread.start()
    try:
        assert first_five.wait(30)
        with Admin(pgq_dsn) as admin:
            stats = admin.rate_stats(["rw"])
        assert stats[0]["remaining"] == 0, "the budget is used up"
        with lock:
            before = len(claims)
        with Queue(pgq_dsn) as queue:
            for _ in range(40):
                queue.enqueue("rw")
        assert sixth.wait(30)
        with lock:
            during = len(claims) - before
    finally:
        worker.stop()
        thread.join(30)
    # The claim that started the 6th job, and at most one more (a notification that arrived
    # while the worker was asking when to look again).
    assert during <= 2, f"{during} claims while the budget was used up"
