"""The CLI over the admin API: --json output, each subcommand's own usage on its errors, no
abbreviated options, one-line errors that say what to do, and `version` as a health check."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest

from pgq_thin.cli import main

REPO = Path(__file__).resolve().parents[2]


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgq_thin", *args],
        cwd=REPO,
        env={**os.environ, "PGQ_THIN_DATA": "/nonexistent/pgq-thin-test"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def one_line_error(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def make_dead(dsn: str, entrypoint: str, message: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute("SELECT pgq.enqueue(%s, '{\"n\": 1}')", (entrypoint,)).fetchone()
        assert row is not None
        conn.execute("SELECT pgq.configure(%s, max_attempts => 1)", (entrypoint,))
        conn.execute(
            "SELECT pgq.complete(c.worker, ARRAY[c.id], ARRAY[c.lease], ARRAY['failed'],"
            " jsonb_build_array(jsonb_build_object('error', 'Boom', 'message', %s::text)))"
            " FROM (SELECT gen_random_uuid() AS worker) w,"
            " LATERAL (SELECT w.worker, j.id, j.lease FROM pgq.claim(w.worker, ARRAY[%s], 1) j) c",
            (message, entrypoint),
        )
        return int(row[0])


def test_json_output(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    dead = make_dead(pgq_dsn, "js.dead", "first line\nsecond line")
    main(["enqueue", "js.live", "--dsn", pgq_dsn])
    main(["schedules", "add", "tick", "js.live", "*/5 * * * *", "--dsn", pgq_dsn])
    capsys.readouterr()

    assert main(["status", "--json", "--dsn", pgq_dsn]) == 0
    status = {row["entrypoint"]: row for row in json.loads(capsys.readouterr().out)}
    assert status["js.live"]["queued"] == 1 and status["js.dead"]["max_attempts"] == 1
    assert status["js.live"]["heartbeat_timeout"] == 30.0  # intervals in seconds

    assert main(["failed", "--json", "--dsn", pgq_dsn]) == 0
    [failed] = json.loads(capsys.readouterr().out)
    assert (failed["id"], failed["entrypoint"]) == (dead, "js.dead")
    assert failed["details"]["message"] == "first line\nsecond line"
    assert failed["finished_at"].startswith("20")

    for args in (["schedules", "list", "--json"], ["schedules", "--json"]):
        assert main([*args, "--dsn", pgq_dsn]) == 0
        [schedule] = json.loads(capsys.readouterr().out)
        assert (schedule["name"], schedule["cron"], schedule["state"]) == (
            "tick",
            "*/5 * * * *",
            "idle",
        )


def test_plain_table_keeps_one_line_per_row(
    pgq_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    make_dead(pgq_dsn, "pl.dead", "first line\nsecond line")
    assert main(["failed", "--plain", "--dsn", pgq_dsn]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 3  # title, header, one row
    assert "first line second line" in lines[2]


@pytest.mark.parametrize(
    ("args", "usage", "message"),
    [
        (["status", "--bogus"], "usage: pgq-thin status", "unrecognized arguments: --bogus"),
        (["enqueue", "x", "--prio", "3"], "usage: pgq-thin enqueue", "--prio 3"),
        (["schedules", "list", "--bogus"], "usage: pgq-thin schedules list", "--bogus"),
        (["status", "--plain", "--json"], "usage: pgq-thin status", "not allowed with"),
        (["embedded", "stop", "--dsn", "x"], "usage: pgq-thin embedded stop", "--dsn x"),
    ],
)
def test_usage_errors_show_the_subcommands_usage(args: list[str], usage: str, message: str) -> None:
    result = run_cli(*args)
    assert result.returncode == 2
    assert result.stderr.startswith(usage), result.stderr
    assert message in result.stderr


def test_version_is_a_health_check(pgq_dsn: str) -> None:
    ok = run_cli("version", "--dsn", pgq_dsn)
    assert ok.returncode == 0 and "(up to date)" in ok.stdout
    down = run_cli("version", "--dsn", "postgresql://nobody@127.0.0.1:1/none")
    assert down.returncode == 1
    assert "database: not reachable" in down.stdout


def test_a_missing_schema_says_what_to_do(empty_db_dsn: str) -> None:
    for args in (["status"], ["enqueue", "x"], ["failed"], ["schedules"]):
        line = one_line_error(run_cli(*args, "--dsn", empty_db_dsn))
        assert line.startswith(f"pgq-thin {args[0]}: ")
        assert "schema pgq is not installed" in line and "run `pgq-thin install`" in line, line


def test_a_missing_privilege_names_the_role(login_role: Callable[..., str]) -> None:
    producer = login_role("pgq_producer")
    nobody = login_role()
    user = psycopg.conninfo.conninfo_to_dict(nobody)["user"]
    line = one_line_error(run_cli("requeue", "1", "--dsn", producer))
    assert line.startswith("pgq-thin requeue: role pgq_t_")
    role = line.split()[3]
    assert "lacks pgq_admin (or the owner)" in line and line.endswith(f"GRANT pgq_admin TO {role}")
    line = one_line_error(run_cli("enqueue", "x", "--dsn", nobody))
    assert line.startswith(f"pgq-thin enqueue: role {user} lacks pgq_producer (permission denied")
    assert line.endswith(f"): GRANT pgq_producer TO {user}")
    line = one_line_error(run_cli("install", "--dsn", producer))
    assert "permission denied" in line and "a role that may create schema pgq" in line


def test_the_operator_role_configures_and_lists_dead_jobs(login_role: Callable[..., str]) -> None:
    """``pgq_admin`` is the operators' role: ``configure``, ``failed`` and ``requeue`` work
    with it alone (before, ``configure`` and ``failed`` needed the schema owner)."""
    operator = login_role("pgq_admin")
    result = run_cli("configure", "ops.a", "--max-attempts", "3", "--json", "--dsn", operator)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["max_attempts"] == 3
    result = run_cli("failed", "--json", "--dsn", operator)
    assert result.returncode == 0 and json.loads(result.stdout) == [], result.stderr
    reader = login_role("pgq_reader")
    assert run_cli("failed", "--dsn", reader).returncode == 0
    line = one_line_error(run_cli("configure", "ops.a", "--max-attempts", "2", "--dsn", reader))
    assert "lacks pgq_admin (or the owner)" in line and "GRANT pgq_admin TO" in line
