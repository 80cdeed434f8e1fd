"""Typed handles: ``@worker.entrypoint`` returns a handle that is still the handler, enqueues
to its entrypoint with a payload checked against the handler's type (by mypy, and when
enqueueing: nothing is stored when it does not fit), and goes where a name goes."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from helpers.db import rows, scalar

from pgq_thin import Job, Queue, ThinWorker
from pgq_thin.entrypoints import Entrypoint
from pgq_thin.payloads import PayloadValidationError


@dataclass
class Email:
    to: str
    subject: str


def make_worker(dsn: str) -> tuple[ThinWorker, Entrypoint[Email, str], Entrypoint[object, None]]:
    worker = ThinWorker(dsn, poll_interval=0.05)

    @worker.entrypoint("send_email")
    def send_email(job: Job[Email]) -> str:
        return f"sent to {job.payload.to}"

    @worker.entrypoint("anything")
    def anything(job: Job[object]) -> None:
        return None

    return worker, send_email, anything


def test_the_handle_enqueues_checked_payloads_and_runs(pgq_dsn: str) -> None:
    worker, send_email, anything = make_worker(pgq_dsn)
    assert isinstance(send_email, Entrypoint) and send_email.name == "send_email"
    assert send_email.__name__ == "send_email" and send_email.payload_type is Email
    with Queue(pgq_dsn) as queue:
        first = send_email.enqueue(queue, Email("a@b.c", "hi"), priority=5)
        second = queue.enqueue(send_email, {"to": "d@e.f", "subject": "raw JSON, valid"})
        [third] = send_email.enqueue_many(queue, [Email("g@h.i", "many")])
        mixed = queue.enqueue_many([send_email, "anything"], [Email("j@k.l", "x"), [1, 2]])
        anything.enqueue(queue, {"free": "form"})
        for bad, says in (
            ({"to": "a@b.c"}, "subject"),  # a field missing
            ("not an email", "send_email"),
        ):
            with pytest.raises(PayloadValidationError, match=says):
                send_email.enqueue(queue, bad)  # type: ignore[arg-type]
        with pytest.raises(PayloadValidationError, match="of type Email, got PosixPath"):
            queue.enqueue(send_email, Path("/"))
    assert rows(pgq_dsn, "SELECT id, entrypoint, payload, priority FROM pgq.jobs ORDER BY id") == [
        (first, "send_email", {"to": "a@b.c", "subject": "hi"}, 5),
        (second, "send_email", {"to": "d@e.f", "subject": "raw JSON, valid"}, 0),
        (third, "send_email", {"to": "g@h.i", "subject": "many"}, 0),
        (mixed[0], "send_email", {"to": "j@k.l", "subject": "x"}, 0),
        (mixed[1], "anything", [1, 2], 0),
        (mixed[1] + 1, "anything", {"free": "form"}, 0),
    ]
    worker.run(until_empty=True)
    assert scalar(pgq_dsn, "SELECT count(*) FROM pgq.jobs") == 0
    with Queue(pgq_dsn) as queue:
        assert queue.result(first).result == "sent to a@b.c"


def test_the_handle_is_still_the_handler(pgq_dsn: str) -> None:
    _, send_email, _ = make_worker(pgq_dsn)
    job = Job(
        id=1,
        entrypoint="send_email",
        payload=Email("x@y.z", "s"),
        headers=None,
        attempt=1,
        max_attempts=5,
        priority=0,
        enqueued_at=datetime.now(UTC),
        heartbeat_timeout=timedelta(seconds=30),
    )
    assert send_email(job) == "sent to x@y.z"  # a test may call the handler directly


def test_mypy_checks_the_payload_against_the_handler(tmp_path: Path) -> None:
    source = tmp_path / "producer.py"
    source.write_text(
        "from dataclasses import dataclass\n"
        "from pgq_thin import Job, Queue, ThinWorker\n"
        "@dataclass\n"
        "class Email:\n"
        "    to: str\n"
        "worker = ThinWorker('dbname=x')\n"
        "@worker.entrypoint('send_email')\n"
        "def send_email(job: Job[Email]) -> None: ...\n"
        "def produce(q: Queue) -> None:\n"
        "    send_email.enqueue(q, Email('a@b.c'))\n"
        "    send_email.enqueue(q, 42)\n"
        "    q.enqueue(send_emial, Email('a@b.c'))\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(source)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    lines = [line for line in result.stdout.splitlines() if ": error:" in line]
    assert len(lines) == 2, result.stdout
    assert "producer.py:11: error: Argument 2" in lines[0] and '"int"' in lines[0]
    assert 'producer.py:12: error: Name "send_emial" is not defined' in lines[1]
