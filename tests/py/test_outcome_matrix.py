"""SQL decides, by behaviour: the same cases driven through the Python worker
(``pgq-thin run matrix_app:worker``), the Node.js worker (examples/node/worker.js) and the psql
worker (examples/psql/worker.sh) leave the same history rows.

Each case runs once per language, every worker a separate process against the same fresh
database: retry (a failure, then success), dead (failures until max_attempts), cancel (a cancel
while the handler runs), interrupted (a shutdown past the grace period), lost (a worker
frozen past its heartbeat timeout, the job taken over), timed out (a job past its time limit:
SQL fails the attempt and the worker stops the handler), snoozed (no attempt used, up to
max_snoozes) and fatal (dead at once). A history row is compared normalised:
its status, attempt and error list, each error entry by its attempt, outcome, decision, keys and
kind (what SQL wrote, such as ``heartbeat timeout``, or ``handler`` for what a handler reported,
whose wording is each language's own); ids, times, leases and worker ids differ by nature. The
rows must equal each other and the expected one, so three workers agreeing on a wrong answer
fail too.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers.server import REPO, PgServer
from helpers.wait import wait_for
from test_any_language import NODE_DIR, PSQL_WORKER, Example, example_env, sql
from test_any_language import node_example as node_example  # the fixture, shared

KINDS = ("python", "node", "psql")
APP_DIR = Path(__file__).resolve().parent
#: Error entries' keys that differ by nature between runs.
VOLATILE = {"at", "run_at", "lease", "worker_id", "details"}
#: Errors SQL writes itself (pgq.claim's takeover of a stale job); any other is a handler's.
SQL_ERRORS = {"heartbeat timeout", "timed out"}

Start = Callable[..., Example]


@pytest.fixture
def start(pg_server: PgServer, pgq_dsn: str, node_example: Path) -> Iterator[Start]:
    """Start a worker of a language on the test's database for the entrypoints given;
    ``grace`` (seconds) bounds how long a stop waits for the job in hand. All are ended after."""
    started: list[Example] = []

    def run(kind: str, *entrypoints: str, grace: float | None = None) -> Example:
        env = {"PGQ_WORKER_ID": str(uuid.uuid4()), "PGQ_BATCH": "1", "PGQ_POLL_MS": "200",
               "PGQ_POLL_S": "0.2"}  # fmt: skip
        if kind == "python":
            argv = [sys.executable, "-m", "pgq_thin", "run", "matrix_app:worker", "--dsn", pgq_dsn]
            argv += [f"--entrypoint={e}" for e in entrypoints] + ["--batch-size=1"]
            argv += [] if grace is None else [f"--grace-period={grace}"]
            pythonpath = os.pathsep.join([str(REPO), str(APP_DIR)])
            env = {**os.environ, "PYTHONPATH": pythonpath, "PGQ_THIN_DATA": "/nonexistent"}
            example = Example(argv, env, APP_DIR)
        else:
            if grace is not None:
                env |= {"PGQ_GRACE_MS": str(int(grace * 1000)), "PGQ_GRACE_S": str(grace)}
            argv, cwd = (
                (["node", "worker.js", *entrypoints], NODE_DIR)
                if kind == "node"
                else (["bash", str(PSQL_WORKER), *entrypoints], REPO)
            )
            example = Example(argv, example_env(pg_server, pgq_dsn, **env), cwd)
            example.line("ready ")
        started.append(example)
        return example

    yield run
    for example in started:
        if example.proc.poll() is None:
            example.proc.send_signal(signal.SIGCONT)
            example.proc.kill()
            example.proc.wait(30)


def enqueue(dsn: str, entrypoint: str, payload: str) -> int:
    return int(sql(dsn, "SELECT pgq.enqueue(%s, %s::jsonb) AS id", entrypoint, payload)[0]["id"])


def done(dsn: str, job_id: int, timeout: float = 60) -> dict[str, Any]:
    """The job's history row, once there."""
    return wait_for(
        lambda: next(iter(sql(dsn, "SELECT * FROM pgq.job_history WHERE id = %s", job_id)), None),
        timeout,
        f"job {job_id} in history",
    )


def running(worker: Example, job_id: int) -> None:
    """Until the worker's handler runs the job (claimed is not enough: a stop before the
    handler began gives the job back, never started)."""
    worker.line(f"started job={job_id} ", timeout=60)


def normalised(row: dict[str, Any]) -> dict[str, Any]:
    def entry(e: dict[str, Any]) -> dict[str, Any]:
        error = (e.get("details") or {}).get("error")
        return {
            "attempt": e["attempt"],
            "outcome": e.get("outcome"),
            "decision": e.get("decision"),
            "kind": error if error in SQL_ERRORS else "handler",
            "keys": sorted(set(e) - VOLATILE),
        }

    return {
        "status": row["status"],
        "attempt": row["attempt"],
        "errors": [entry(e) for e in row["errors"]],
    }


def assert_same(rows: dict[str, dict[str, Any]], expected: dict[str, Any]) -> None:
    seen = {kind: normalised(row) for kind, row in rows.items()}
    assert list(seen) == list(KINDS)
    for kind in KINDS[1:]:
        assert seen[kind] == seen[KINDS[0]], f"{kind} differs from {KINDS[0]}"
    assert seen[KINDS[0]] == expected


def handler_entry(attempt: int, decision: str | None, outcome: str | None = None) -> dict[str, Any]:
    keys = ["attempt", *(["decision"] if decision else []), *(["outcome"] if outcome else [])]
    return {"attempt": attempt, "outcome": outcome, "decision": decision, "kind": "handler",
            "keys": keys}  # fmt: skip


def tree(pid: int) -> list[int]:
    """The process and its descendants (the psql worker heartbeats from a child process)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    below = children.read_text().split() if children.exists() else []
    return [pid, *(p for child in below for p in tree(int(child)))]


def freeze(example: Example, sig: signal.Signals) -> None:
    for pid in tree(example.proc.pid):
        with contextlib.suppress(ProcessLookupError):  # ended meanwhile (a pause's sleep)
            os.kill(pid, sig)


def stop(example: Example) -> None:
    assert example.stop() == 0, example.output()


# --- the cases ---------------------------------------------------------------------------------


def test_retry_then_success_leaves_the_same_history(pgq_dsn: str, start: Start) -> None:
    sql(pgq_dsn, "SELECT pgq.configure('flaky', max_attempts => 3, backoff_base => '50 ms')")
    rows = {}
    for kind in KINDS:
        worker = start(kind, "flaky")
        rows[kind] = done(pgq_dsn, enqueue(pgq_dsn, "flaky", '{"fails": 1}'))
        stop(worker)
    assert_same(rows, {"status": "successful", "attempt": 2, "errors": [handler_entry(1, "retry")]})


def test_dead_after_max_attempts_leaves_the_same_history(pgq_dsn: str, start: Start) -> None:
    sql(pgq_dsn, "SELECT pgq.configure('fail', max_attempts => 2, backoff_base => '50 ms')")
    rows = {}
    for kind in KINDS:
        worker = start(kind, "fail")
        rows[kind] = done(pgq_dsn, enqueue(pgq_dsn, "fail", '{"why": "matrix"}'))
        stop(worker)
    assert_same(
        rows,
        {
            "status": "failed",
            "attempt": 2,
            "errors": [handler_entry(1, "retry"), handler_entry(2, "failed")],
        },
    )


def test_cancel_while_running_leaves_the_same_history(pgq_dsn: str, start: Start) -> None:
    sql(pgq_dsn, "SELECT pgq.configure('sleep', heartbeat_timeout => '3 s')")
    rows = {}
    for kind in KINDS:
        worker = start(kind, "sleep")
        job_id = enqueue(pgq_dsn, "sleep", '{"ms": 60000}')
        running(worker, job_id)
        sql(pgq_dsn, "SELECT pgq.cancel(ARRAY[%s::bigint])", job_id)
        rows[kind] = done(pgq_dsn, job_id, timeout=20)  # the handler stopped, long before 60 s
        stop(worker)
    assert_same(rows, {"status": "canceled", "attempt": 1, "errors": []})


def test_interrupted_by_shutdown_leaves_the_same_history(pgq_dsn: str, start: Start) -> None:
    """A stop whose grace period runs out cuts the job off: reported interrupted, it is queued
    again at once with its attempt not counted; canceled then (queued: straight to history)."""
    rows = {}
    for kind in KINDS:
        worker = start(kind, "sleep", grace=0.5)
        job_id = enqueue(pgq_dsn, "sleep", '{"ms": 60000}')
        running(worker, job_id)
        stop(worker)
        back = sql(pgq_dsn, "SELECT status, attempt FROM pgq.jobs WHERE id = %s", job_id)
        assert back == [{"status": "queued", "attempt": 0}], kind
        sql(pgq_dsn, "SELECT pgq.cancel(ARRAY[%s::bigint])", job_id)
        rows[kind] = done(pgq_dsn, job_id)
    assert_same(
        rows,
        {"status": "canceled", "attempt": 0, "errors": [handler_entry(1, "retry", "interrupted")]},
    )


def test_lost_lease_leaves_the_same_history(pgq_dsn: str, start: Start) -> None:
    """A worker frozen (SIGSTOP, with its child processes) past the heartbeat timeout loses the
    job to another of its language, which finishes it; the frozen one, thawed, is refused."""
    sql(pgq_dsn, "SELECT pgq.configure('sleep', heartbeat_timeout => '1 s')")
    stale_beat = "SELECT 1 FROM pgq.jobs WHERE id = %s AND heartbeat_at < now() - interval '1 s'"
    rows = {}
    for kind in KINDS:
        stale = start(kind, "sleep")
        job_id = enqueue(pgq_dsn, "sleep", '{"ms": 2000}')
        running(stale, job_id)
        freeze(stale, signal.SIGSTOP)
        wait_for(lambda: sql(pgq_dsn, stale_beat, job_id), 30, "a stale heartbeat")  # noqa: B023
        taker = start(kind, "sleep")
        rows[kind] = done(pgq_dsn, job_id)
        freeze(stale, signal.SIGCONT)
        stop(stale)
        stop(taker)
    timeout = {"attempt": 1, "outcome": None, "decision": "retry", "kind": "heartbeat timeout",
               "keys": ["attempt", "decision"]}  # fmt: skip
    assert_same(rows, {"status": "successful", "attempt": 2, "errors": [timeout]})


def test_timed_out_leaves_the_same_history(pgq_dsn: str, start: Start) -> None:
    """A job with a 1 s limit whose handler would sleep a minute: SQL fails the attempt (dead:
    max_attempts 1), the heartbeat just after the deadline tells the worker, which stops the
    handler and writes nothing; the next job then runs at once on the same worker."""
    sql(pgq_dsn, "SELECT pgq.configure('sleep', max_attempts => 1)")
    rows = {}
    for kind in KINDS:
        worker = start(kind, "sleep")
        job_id = int(
            sql(
                pgq_dsn,
                "SELECT pgq.enqueue('sleep', '{\"ms\": 60000}', timeout => '1 s') AS id",
            )[0]["id"]
        )
        rows[kind] = done(pgq_dsn, job_id, timeout=30)
        after = enqueue(pgq_dsn, "sleep", '{"ms": 10}')
        assert done(pgq_dsn, after, timeout=20)["status"] == "successful", kind
        stop(worker)
    timed_out = {"attempt": 1, "outcome": None, "decision": "failed", "kind": "timed out",
                 "keys": ["attempt", "decision"]}  # fmt: skip
    assert_same(rows, {"status": "failed", "attempt": 1, "errors": [timed_out]})
    assert rows["python"]["errors"][0]["details"]["message"] == "timed out after 1 s"


def test_snoozed_leaves_the_same_history(pgq_dsn: str, start: Start) -> None:
    """A handler that always snoozes: the first snooze uses no attempt, the second is past
    max_snoozes 1 and counts as a failed attempt, the last (max_attempts 1): dead."""
    sql(pgq_dsn, "SELECT pgq.configure('nap', max_attempts => 1, max_snoozes => 1)")
    rows = {}
    for kind in KINDS:
        worker = start(kind, "nap")
        rows[kind] = done(pgq_dsn, enqueue(pgq_dsn, "nap", "{}"))
        stop(worker)
    snoozed = handler_entry(1, "snoozed", "snoozed")
    assert_same(
        rows, {"status": "failed", "attempt": 1, "errors": [snoozed, handler_entry(1, "failed")]}
    )
    for kind in KINDS:
        assert rows[kind]["errors"][1]["details"]["snoozed"] is True, kind


def test_fatal_leaves_the_same_history(pgq_dsn: str, start: Start) -> None:
    """A job that can never succeed is dead on its first attempt, whatever attempts are left."""
    sql(pgq_dsn, "SELECT pgq.configure('doom', max_attempts => 5)")
    rows = {}
    for kind in KINDS:
        worker = start(kind, "doom")
        rows[kind] = done(pgq_dsn, enqueue(pgq_dsn, "doom", '{"why": "matrix"}'))
        stop(worker)
    assert_same(
        rows, {"status": "failed", "attempt": 1, "errors": [handler_entry(1, "failed", "fatal")]}
    )
