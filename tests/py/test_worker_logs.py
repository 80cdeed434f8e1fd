"""The worker's log lines: one per job at DEBUG (a failure's with its traceback), what SQL
decided for a failure on one line (a retry at WARNING, a dead job at ERROR with the traceback),
cancellations at INFO, a progress line, a summary at stop, structured fields on every record,
no other library's INFO lines, and JSON lines from ``pgq-thin run --log-format json``."""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import observe_app
import psycopg
import pytest

from pgq_thin import logs
from pgq_thin.admin import Admin
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

APP_DIR = Path(__file__).resolve().parent

ENDINGS = {  # entrypoint -> (outcome, level)
    "obs.ok": ("successful", logging.DEBUG),
    "obs.fail": ("failed", logging.DEBUG),
    "obs.retry": ("retry_after", logging.DEBUG),
    "obs.cancel": ("canceled", logging.INFO),
    "obs.typed": ("invalid_payload", logging.DEBUG),
}


def enqueue_one_of_each(dsn: str) -> dict[str, int]:
    with Queue(dsn) as q:
        for name in ENDINGS:
            Admin(q.connection).configure(name, max_attempts=1)
        return {
            name: q.enqueue(name, {"wrong": 1} if name == "obs.typed" else {"n": 1})
            for name in ENDINGS
        }


def fresh_worker(dsn: str) -> ThinWorker:
    """The app's handlers on a worker of this test's own (the module's worker is shared)."""
    worker = ThinWorker(dsn, poll_interval=0.2)
    for name, handler in observe_app.worker._registry.handlers.items():
        worker.entrypoint(name, payload_type=handler.payload_type)(handler.fn)
    return worker


def test_one_line_per_job_ending_with_its_fields(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    ids = enqueue_one_of_each(pgq_dsn)
    worker = fresh_worker(pgq_dsn)
    caplog.set_level(logging.DEBUG, logger="pgq_thin")
    worker.run(until_empty=True)

    wid = str(worker.worker_id)
    records = [r for r in caplog.records if r.name == "pgq_thin.worker"]
    assert records and all(getattr(r, "worker_id", None) == wid for r in records)
    for name, job_id in ids.items():
        mine = [r for r in records if getattr(r, "job_id", None) == job_id]
        claimed = [r for r in mine if r.getMessage().endswith(": claimed")]
        assert len(claimed) == 1 and claimed[0].levelno == logging.DEBUG, name
        ended = [r for r in mine if hasattr(r, "outcome") and not hasattr(r, "decided")]
        outcome, level = ENDINGS[name]
        assert [(r.outcome, r.levelno) for r in ended] == [(outcome, level)], name
        line = ended[0]
        assert (line.entrypoint, line.attempt, line.max_attempts) == (name, 1, 1)
        assert isinstance(line.duration, float) and line.duration >= 0
        message = line.getMessage()
        assert message.startswith(f"pgq-thin job {job_id} ({name}) attempt 1 of 1: {outcome} in ")
        if name == "obs.fail":
            assert line.exc_info is not None and line.exc_info[0] is ValueError
            assert message.endswith(": ValueError: boom on attempt 1")
        else:
            assert line.exc_info is None
    details = {
        "obs.retry": "retry after 30 s",
        "obs.cancel": "not needed any more",
        "obs.typed": "Email",
    }
    for name, text in details.items():
        (line,) = [
            r
            for r in records
            if getattr(r, "job_id", None) == ids[name]
            and hasattr(r, "outcome")
            and not hasattr(r, "decided")
        ]
        assert text in line.getMessage(), line.getMessage()

    # What SQL decided, from pgq.complete's answer: max_attempts 1, so every failure is dead:
    # one ERROR line with the error (and the traceback of what the handler raised).
    decided = {r.job_id: r for r in records if hasattr(r, "decided")}
    errors = {
        "obs.fail": "failed: ValueError: boom on attempt 1",
        "obs.retry": "failed: RetryAfter: retry after 30 s",
        "obs.typed": "fatal: PayloadValidationError: payload does not match Email",
    }
    for name, error in errors.items():
        line = decided.pop(ids[name])
        assert (line.decided, line.retry_in, line.levelno) == ("failed", None, logging.ERROR)
        message = line.getMessage()
        assert message.startswith(f"pgq-thin job {ids[name]} ({name}) attempt 1 of 1 {error}")
        assert message.endswith("; dead") and "\n" not in message
        assert (line.exc_info is not None) == (name == "obs.fail"), name
    assert decided == {}, "no decision line for successful or canceled jobs"

    (summary,) = [r for r in records if "stopped after" in r.getMessage()]
    assert summary.levelno == logging.INFO
    assert summary.stats["claimed"] == 5 and summary.stats["successful"] == 1
    assert summary.stats["failed"] == 3 and summary.stats["canceled"] == 1
    assert "5 claimed, 1 successful, 3 failed, 1 canceled, 0 lost" in summary.getMessage()
    assert summary.uptime > 0 and summary.jobs_per_second > 0


def test_a_retry_is_logged_from_what_sql_answered(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Queue(pgq_dsn) as q:
        Admin(q.connection).configure(
            "obs.fail", max_attempts=3, backoff_base=timedelta(seconds=40)
        )
        job_id = q.enqueue("obs.fail", {"n": 1})
    worker = fresh_worker(pgq_dsn)
    caplog.set_level(logging.INFO, logger="pgq_thin")
    worker.run(until_empty=True)  # one attempt: the retry is not due before the run ends
    (line,) = [r for r in caplog.records if getattr(r, "decided", None)]
    with psycopg.connect(pgq_dsn) as conn:
        row = conn.execute(
            "SELECT extract(epoch FROM run_at - (errors -> -1 ->> 'at')::timestamptz)"
            " FROM pgq.jobs WHERE id = %s",
            (job_id,),
        ).fetchone()
    assert row is not None
    assert (line.decided, line.levelno, line.attempt, line.max_attempts) == (
        "retry",
        logging.WARNING,
        1,
        3,
    )
    assert 20 <= line.retry_in <= 40 and line.retry_in == pytest.approx(float(row[0]), abs=1e-3)
    assert line.getMessage() == (
        f"pgq-thin job {job_id} (obs.fail) attempt 1 of 3 failed: ValueError: boom on attempt 1;"
        f" retry in {line.retry_in:.3g} s"
    )
    assert line.exc_info is None, "one line: the traceback is on the DEBUG line"
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == [line], "a retry is one WARNING line"


def test_at_info_a_successful_job_logs_nothing(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Queue(pgq_dsn) as q:
        q.enqueue_many("obs.ok", [{"n": i} for i in range(20)])
    worker = fresh_worker(pgq_dsn)
    caplog.set_level(logging.INFO, logger="pgq_thin")
    worker.run(until_empty=True)
    assert worker.stats.successful == 20
    per_job = [r for r in caplog.records if hasattr(r, "job_id")]
    assert per_job == []
    assert [r for r in caplog.records if "started" in r.getMessage()]
    assert [r for r in caplog.records if "stopped after" in r.getMessage()]


def test_json_formatter_writes_one_object_per_line_with_the_fields() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logger = logging.getLogger("pgq_thin.test_json")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        try:
            raise KeyError("to")
        except KeyError as err:
            logger.warning(
                "job %s failed\nsecond line",
                7,
                exc_info=err,
                extra={"job_id": 7, "entrypoint": "e", "when": object()},
            )
    finally:
        logger.removeHandler(handler)
    (line,) = stream.getvalue().splitlines()
    data = json.loads(line)
    assert data["message"] == "job 7 failed\nsecond line"
    assert (data["level"], data["logger"], data["job_id"], data["entrypoint"]) == (
        "WARNING",
        "pgq_thin.test_json",
        7,
        "e",
    )
    assert data["time"].endswith("+00:00")
    assert "Traceback" in data["exc_info"] and "KeyError: 'to'" in data["exc_info"]
    assert data["when"].startswith("<object object")


def test_pgq_thin_run_log_format_json(pgq_dsn: str) -> None:
    ids = enqueue_one_of_each(pgq_dsn)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pgq_thin",
            "run",
            "observe_app:worker",
            "--dsn",
            pgq_dsn,
            "--drain",
            "--log-format",
            "json",
            "--log-level",
            "DEBUG",
        ],
        cwd=APP_DIR,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stderr.splitlines()]  # every line is JSON
    worker_lines = [d for d in lines if d["logger"] == "pgq_thin.worker"]
    wids = {d.get("worker_id") for d in worker_lines}
    assert len(wids) == 1 and None not in wids
    ended = {d["job_id"]: d for d in worker_lines if "outcome" in d and "decided" not in d}
    assert {job_id: ended[job_id]["outcome"] for job_id in ids.values()} == {
        job_id: ENDINGS[name][0] for name, job_id in ids.items()
    }
    failed = ended[ids["obs.fail"]]
    assert failed["level"] == "DEBUG" and failed["attempt"] == 1
    assert failed["entrypoint"] == "obs.fail" and isinstance(failed["duration"], float)
    assert "Traceback" in failed["exc_info"] and "ValueError: boom" in failed["exc_info"]
    dead = {d["job_id"]: d for d in worker_lines if d.get("decided") == "failed"}
    assert (
        dead[ids["obs.fail"]]["level"] == "ERROR"
        and "Traceback" in dead[ids["obs.fail"]]["exc_info"]
    )
    (summary,) = [d for d in worker_lines if "stats" in d]
    assert summary["stats"]["claimed"] == 5 and summary["level"] == "INFO"
    with psycopg.connect(pgq_dsn) as conn:
        row = conn.execute("SELECT count(*) FROM pgq.job_history").fetchone()
    assert row == (5,)


def test_log_format_must_be_known(pgq_dsn: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "pgq_thin", "run", "observe_app:worker", "--log-format", "xml"],
        cwd=APP_DIR,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2 and "invalid choice: 'xml'" in proc.stderr
