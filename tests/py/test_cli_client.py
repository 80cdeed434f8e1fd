"""pgq-thin run/enqueue/status/failed/requeue: happy paths, and user mistakes as one line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pgq_thin.cli import main

APP_DIR = Path(__file__).resolve().parent


def run_cli(*args: str, cwd: Path = APP_DIR) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgq_thin", *args],
        cwd=cwd,
        env={**os.environ, "PGQ_THIN_DATA": "/nonexistent/pgq-thin-test"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def test_enqueue_status_failed_requeue(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["enqueue", "cli.job", '{"a": 1}', "--priority", "3", "--dsn", pgq_dsn]) == 0
    job_id = int(capsys.readouterr().out.strip())
    assert main(["enqueue", "cli.job", "--delay", "60", "--dedupe-key", "k", "--dsn", pgq_dsn]) == 0
    capsys.readouterr()
    with psycopg.connect(pgq_dsn) as conn:
        assert conn.execute(
            "SELECT payload, priority FROM pgq.jobs WHERE id = %s", (job_id,)
        ).fetchone() == ({"a": 1}, 3)

    assert main(["status", "--plain", "--dsn", pgq_dsn]) == 0
    out = capsys.readouterr().out
    assert "cli.job" in out and "queued" in out

    # Make the job dead through the SQL API, then list and requeue it from the CLI.
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.configure('cli.job', max_attempts => 1)")
        conn.execute(
            "SELECT pgq.complete(c.worker, ARRAY[c.id], ARRAY[c.lease], ARRAY['failed'],"
            ' ARRAY[\'{"error": "Boom", "message": "it broke"}\'::jsonb])'
            " FROM (SELECT gen_random_uuid() AS worker) w,"
            " LATERAL (SELECT w.worker, j.id, j.lease"
            "          FROM pgq.claim(w.worker, ARRAY['cli.job'], 1) j) c"
        )
    assert main(["failed", "--plain", "--dsn", pgq_dsn]) == 0
    out = capsys.readouterr().out
    assert str(job_id) in out and "Boom" in out and "it broke" in out
    assert main(["requeue", str(job_id), "999999", "--dsn", pgq_dsn]) == 0
    out = capsys.readouterr().out
    assert f"requeued 1 job(s): {job_id}" in out and "999999" in out


def test_status_as_a_rich_table(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("rich")
    main(["enqueue", "rich.job", "--dsn", pgq_dsn])
    assert main(["status", "--dsn", pgq_dsn]) == 0
    assert "rich.job" in capsys.readouterr().out


def test_help_lists_every_command() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for command in ("run", "enqueue", "status", "failed", "requeue", "demo", "install"):
        assert command in result.stdout
    run_help = run_cli("run", "--help").stdout
    for option in ("--concurrency", "--batch-size", "--drain", "--entrypoint", "MODULE:ATTR"):
        assert option in run_help


def test_invalid_json_payload(pgq_dsn: str) -> None:
    line = one_line_error(run_cli("enqueue", "x", "{bad", "--dsn", pgq_dsn))
    assert "not valid JSON" in line


def test_invalid_entrypoint_from_the_database(pgq_dsn: str) -> None:
    line = one_line_error(run_cli("enqueue", "", "--dsn", pgq_dsn))
    assert "invalid entrypoint" in line


def test_bad_dsn() -> None:
    line = one_line_error(run_cli("status", "--dsn", "postgresql://nobody@127.0.0.1:1/none"))
    assert line.startswith("pgq-thin status:")


def test_module_not_found(pgq_dsn: str) -> None:
    line = one_line_error(run_cli("run", "no_such_module:worker", "--dsn", pgq_dsn))
    assert "cannot import module 'no_such_module'" in line


def test_missing_attribute(pgq_dsn: str) -> None:
    line = one_line_error(run_cli("run", "client_app:nope", "--dsn", pgq_dsn))
    assert "has no attribute 'nope'" in line


def test_target_without_colon(pgq_dsn: str) -> None:
    assert "MODULE:ATTR" in one_line_error(run_cli("run", "client_app", "--dsn", pgq_dsn))


def test_unknown_entrypoint(pgq_dsn: str) -> None:
    result = run_cli("run", "client_app:worker", "--entrypoint", "nope", "--dsn", pgq_dsn)
    line = one_line_error(result)
    assert "unknown entrypoint(s) nope" in line and "proc.work" in line


# --- errors no retry can fix end `run` at once, as one line naming the fix -------------------


def timed_run(*args: str) -> tuple[float, subprocess.CompletedProcess[str]]:
    began = time.monotonic()
    result = run_cli("run", *args)
    return time.monotonic() - began, result


def test_run_with_the_schema_missing(empty_db_dsn: str) -> None:
    seconds, result = timed_run("observe_app:worker", "--dsn", empty_db_dsn)
    line = one_line_error(result)
    assert line.startswith("pgq-thin run: schema pgq is not installed"), line
    assert line.endswith("run `pgq-thin install` (or `pgq-thin upgrade`)"), line
    assert result.returncode == 1 and seconds < 10


def test_run_as_a_role_without_pgq_worker(login_role: Callable[..., str]) -> None:
    dsn = login_role("pgq_producer")
    role = psycopg.conninfo.conninfo_to_dict(dsn)["user"]
    seconds, result = timed_run("observe_app:worker", "--dsn", dsn)
    line = one_line_error(result)
    assert line == (
        f"pgq-thin run: role {role} lacks pgq_worker (permission denied for function claim): "
        f"GRANT pgq_worker TO {role}"
    )
    assert result.returncode == 1 and seconds < 10


def test_run_of_a_job_handler_says_what_to_pass(pgq_dsn: str) -> None:
    seconds, result = timed_run("observe_app:handler_only", "--dsn", pgq_dsn)
    assert one_line_error(result) == (
        "pgq-thin run: observe_app:handler_only is not a worker or a function that makes one: "
        "it takes arguments (job), like a job handler; pass the worker instead: "
        "observe_app:worker"
    )
    assert result.returncode == 2 and seconds < 10
    # a registered handler too; a class that needs arguments likewise
    assert "observe_app:worker" in one_line_error(run_cli("run", "observe_app:fail"))
    assert "takes arguments (to)" in one_line_error(run_cli("run", "observe_app:Email"))


def test_a_handler_that_is_not_a_function_is_refused_at_registration() -> None:
    from pgq_thin.worker import ThinWorker

    worker = ThinWorker("postgresql://unused")
    with pytest.raises(TypeError, match="handler of entrypoint 'x' must be a function"):
        worker.entrypoint("x")(42)  # type: ignore[type-var]


def test_run_drains_the_queue(pgq_dsn: str) -> None:
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.enqueue('proc.work', %s)", (json.dumps({"sleep": 0}),))
    result = run_cli("run", "client_app:worker", "--drain", "--dsn", pgq_dsn)
    assert result.returncode == 0, result.stderr
    with psycopg.connect(pgq_dsn) as conn:
        assert conn.execute("SELECT status FROM pgq.job_history").fetchall() == [("successful",)]


def test_schedules_add_list_remove(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["schedules", "add", "nightly", "report.build", "30 2 * * *", '{"kind": "daily"}']
    assert main([*args, "--timezone", "Europe/Berlin", "--dsn", pgq_dsn]) == 0
    assert "next run" in capsys.readouterr().out
    with psycopg.connect(pgq_dsn) as conn:
        row = conn.execute(
            "SELECT entrypoint, cron, timezone, payload,"
            " (next_run_at AT TIME ZONE 'Europe/Berlin')::time FROM pgq.schedules"
        ).fetchone()
    assert row is not None
    assert row[:4] == ("report.build", "30 2 * * *", "Europe/Berlin", {"kind": "daily"})
    assert str(row[4]) == "02:30:00"
    assert main(["--dsn", pgq_dsn, "schedules", "--plain"]) == 0
    assert "nightly" in capsys.readouterr().out
    assert main(["schedules", "remove", "nightly", "--dsn", pgq_dsn]) == 0
    with psycopg.connect(pgq_dsn) as conn:
        assert conn.execute("SELECT count(*) FROM pgq.schedules").fetchone() == (0,)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["add", "bad", "x", "61 * * * *"], "invalid cron expression '61 * * * *'"),
        (["add", "bad", "x", "* * * * *", "--timezone", "Mars/X"], "unknown time zone 'Mars/X'"),
        (["add", "bad", "x", "* * * * *", "{nope"], "the payload is not valid JSON"),
        (["remove", "missing"], "no schedule named 'missing'"),
    ],
)
def test_schedules_user_mistakes_are_one_line(pgq_dsn: str, args: list[str], message: str) -> None:
    line = one_line_error(run_cli("schedules", *args, "--dsn", pgq_dsn))
    assert message in line
