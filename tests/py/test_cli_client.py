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

from pgq_thin import Admin, Queue
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
            ' \'[{"error": "Boom", "message": "it broke"}]\')'
            " FROM (SELECT gen_random_uuid() AS worker) w,"
            " LATERAL (SELECT w.worker, j.id, j.lease"
            "          FROM pgq.claim(w.worker, ARRAY['cli.job'], 1) j) c"
        )
    assert main(["failed", "--plain", "--dsn", pgq_dsn]) == 0
    out = capsys.readouterr().out
    assert str(job_id) in out and "Boom" in out and "it broke" in out
    assert main(["requeue", str(job_id), "999999", "--dsn", pgq_dsn]) == 1  # one id left alone
    out, err = capsys.readouterr()
    assert f"requeued 1 job(s): {job_id}" in out
    assert err == "pgq-thin requeue: not requeued: 999999 (unknown, still live, or successful)\n"


def test_status_as_a_boxed_table(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    main(["enqueue", "rich.job", "--dsn", pgq_dsn])
    capsys.readouterr()
    assert main(["status", "--dsn", pgq_dsn]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].strip() == "pgq queue status" and lines[1].startswith("┏━")
    assert lines[2].startswith("┃ entrypoint ┃ queued ┃") and lines[-1].startswith("└─")
    assert next(line for line in lines if "rich.job" in line).startswith("│ rich.job ")
    assert len({len(line) for line in lines[1:]}) == 1  # every row as wide as the box


def test_help_lists_every_command() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for command in (
        "run",
        "enqueue",
        "status",
        "failed",
        "requeue",
        "demo",
        "install",
        "show",
        "cancel",
        "pause",
        "resume",
        "configure",
        "prune",
        "workers",
    ):
        assert command in result.stdout
    run_help = run_cli("run", "--help").stdout
    for option in ("--concurrency", "--threads", "--batch-size", "--drain", "--entrypoint"):
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
        # the first call of a run: announcing the worker in the registry
        f"pgq-thin run: role {role} lacks pgq_worker (permission denied for function "
        "register_worker): "
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


# --- the operator's verbs: cancel, pause, resume, show, configure, prune, requeue, workers -----


def fail_all(dsn: str, entrypoint: str, error: str, message: str) -> list[int]:
    """Make every due job of an entrypoint dead through the SQL API (one attempt allowed)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.configure(%s, max_attempts => 1)", (entrypoint,))
        rows = conn.execute(
            "SELECT c.id FROM (SELECT gen_random_uuid() AS worker) w,"
            " LATERAL (SELECT w.worker, j.id, j.lease"
            "          FROM pgq.claim(w.worker, ARRAY[%s], 100) j) c,"
            " LATERAL pgq.complete(c.worker, ARRAY[c.id], ARRAY[c.lease], ARRAY['failed'],"
            "   jsonb_build_array(jsonb_build_object('error', %s::text, 'message', %s::text)))"
            " done",
            (entrypoint, error, message),
        ).fetchall()
    return sorted(r[0] for r in rows)


def cli_json(capsys: pytest.CaptureFixture[str], *args: str, code: int = 0) -> object:
    assert main([*args, "--json"]) == code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def test_cancel_pause_resume_configure(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = ("--dsn", pgq_dsn)
    main(["enqueue", "op.a", *d])
    job_id = int(capsys.readouterr().out)
    assert cli_json(capsys, "cancel", str(job_id), "424242", *d, code=1) == {
        "canceled": [job_id],
        "not_canceled": [424242],
    }
    # an id that was not canceled: exit 1 and one line naming it (a script must not miss it)
    result = run_cli("cancel", "424242", str(job_id), "--dsn", pgq_dsn)
    assert result.returncode == 1 and result.stdout == "canceled 0 job(s)\n"
    assert one_line_error(result) == (
        f"pgq-thin cancel: not canceled: 424242 {job_id} (unknown, or already finished)"
    )

    [paused] = cli_json(capsys, "pause", "op.a", *d)  # type: ignore[misc]
    assert paused["entrypoint"] == "op.a" and paused["paused_at"] and paused["paused_by"]
    status = cli_json(capsys, "status", *d)
    assert [(r["entrypoint"], r["paused"]) for r in status] == [("op.a", True)]  # type: ignore[union-attr]
    assert main(["resume", "op.a", "op.never", "--plain", *d]) == 0
    out = capsys.readouterr().out
    assert "op.a" in out and "not paused (or unknown): op.never" in out

    config = cli_json(
        capsys, "configure", "op.a", "--max-attempts", "3", "--backoff-base", "2m", *d
    )
    assert (config["max_attempts"], config["backoff_base"]) == (3, 120.0)  # type: ignore[index]
    assert main(["configure", "op.a", "--reset", "--plain", *d]) == 0
    assert "op.a" in capsys.readouterr().out


def test_configure_sets_and_shows_the_flow_limits(
    pgq_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    d = ("--dsn", pgq_dsn)
    config = cli_json(
        capsys,
        "configure",
        "op.keys",
        "--key-concurrency-limit",
        "2",
        "--dedupe-period",
        "1h",
        "--dedupe-states",
        "successful,failed",
        *d,
    )
    assert config["key_concurrency_limit"] == 2  # type: ignore[index]
    assert config["dedupe_period"] == 3600.0  # type: ignore[index]
    assert config["dedupe_states"] == ["successful", "failed"]  # type: ignore[index]
    assert main(["configure", "op.keys", "--plain", *d]) == 0
    out = capsys.readouterr().out
    assert "key_concurrency_limit" in out and "successful" in out
    result = run_cli("configure", "op.keys", "--key-concurrency-limit", "0", "--dsn", pgq_dsn)
    assert result.returncode != 0
    assert "key_concurrency_limit must be between 1 and 1000000, got 0" in one_line_error(result)


def test_configure_sets_and_shows_the_time_limits(
    pgq_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    d = ("--dsn", pgq_dsn)
    config = cli_json(
        capsys, "configure", "op.limits", "--run-timeout", "90s", "--max-interruptions", "1",
        "--max-snoozes", "7", *d,
    )  # fmt: skip
    assert (config["run_timeout"], config["max_interruptions"], config["max_snoozes"]) == (  # type: ignore[index]
        90.0, 1, 7,
    )  # fmt: skip
    assert main(["configure", "op.limits", "--plain", *d]) == 0
    assert "run_timeout" in capsys.readouterr().out
    removed = cli_json(capsys, "configure", "op.limits", "--run-timeout", "0", *d)
    assert removed["run_timeout"] is None  # type: ignore[index]
    result = run_cli("configure", "op.limits", "--max-snoozes", "-1", "--dsn", pgq_dsn)
    assert result.returncode != 0
    assert "max_snoozes must be between 0 and 10000, got -1" in one_line_error(result)


def test_show_one_job(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = ("--dsn", pgq_dsn)
    main(["enqueue", "show.a", '{"to": "x"}', *d])
    job_id = int(capsys.readouterr().out)
    [dead] = fail_all(pgq_dsn, "show.a", "SmtpError", "mail server down")
    assert dead == job_id
    data = cli_json(capsys, "show", str(job_id), *d)
    assert (data["status"], data["payload"], data["attempt"]) == ("failed", {"to": "x"}, 1)  # type: ignore[index]
    assert main(["show", str(job_id), *d]) == 0
    out = capsys.readouterr().out
    assert "status:         failed" in out and "attempt:        1 of 1" in out
    assert "error #1 at " in out and "SmtpError: mail server down" in out
    result = run_cli("show", "999999", "--dsn", pgq_dsn)
    assert result.returncode == 1 and "no job 999999" in one_line_error(result)


def test_requeue_by_filter_and_by_id(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = ("--dsn", pgq_dsn)
    for n in range(3):
        main(["enqueue", "rq.a", json.dumps({"n": n}), *d])
    main(["enqueue", "rq.b", *d])
    capsys.readouterr()
    timeouts = fail_all(pgq_dsn, "rq.a", "Timeout", "too slow")
    [other] = fail_all(pgq_dsn, "rq.b", "KeyError", "k")

    assert cli_json(
        capsys, "requeue", "--entrypoint", "rq.a", "--since", "2099-01-01T00:00+00:00", *d
    ) == {"requeued": []}
    assert cli_json(capsys, "requeue", "--error", "key", "--since", "1h", *d) == {
        "requeued": [other]
    }
    assert main(["requeue", "--all-failed", *d]) == 0
    assert "requeued 3 job(s)" in capsys.readouterr().out
    assert fail_all(pgq_dsn, "rq.a", "Timeout", "again") == timeouts
    assert cli_json(capsys, "requeue", str(timeouts[0]), "5", *d, code=1) == {
        "requeued": [timeouts[0]],
        "not_requeued": [5],
    }
    assert "give job ids, a filter or --workflow, not more than one" in one_line_error(
        run_cli("requeue", "1", "--entrypoint", "x", "--dsn", pgq_dsn)
    )
    assert "not more than one" in one_line_error(
        run_cli("requeue", "--workflow", "1", "--all-failed", "--dsn", pgq_dsn)
    )
    assert "--all-failed" in one_line_error(run_cli("requeue", "--dsn", pgq_dsn))
    bad = run_cli("requeue", "--since", "yesterday", "--dsn", pgq_dsn)
    assert bad.returncode == 2 and "not a time: 'yesterday'" in bad.stderr


def test_requeue_the_failed_part_of_a_workflow(
    pgq_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``requeue --workflow ID``: the dead first job and the two it canceled come back, those
    two waiting for it again (pgq.requeue_workflow)."""
    d = ("--dsn", pgq_dsn)
    with Queue(pgq_dsn) as queue:
        ids = queue.enqueue_many(["rw.a", "rw.b", "rw.c"], [None] * 3, depends_on=[None, [1], [2]])
    fail_all(pgq_dsn, "rw.a", "Boom", "it broke")
    assert cli_json(capsys, "requeue", "--workflow", str(ids[2]), *d) == {"requeued": ids}
    with Admin(pgq_dsn) as admin:
        assert [w["state"] for w in admin.workflow(ids[0])] == ["queued", "waiting", "waiting"]
    assert main(["requeue", "--workflow", str(ids[0]), *d]) == 0
    assert "requeued 0 job(s)" in capsys.readouterr().out


def test_prune_and_workers(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = ("--dsn", pgq_dsn)
    main(["enqueue", "pr.a", *d])
    capsys.readouterr()
    fail_all(pgq_dsn, "pr.a", "E", "m")
    assert cli_json(capsys, "prune", "--older-than", "1d", *d) == {"deleted": 0}
    assert main(["prune", "--older-than", "0", *d]) == 0
    assert "deleted 1 finished job(s)" in capsys.readouterr().out
    bad = run_cli("prune", "--older-than", "soon", "--dsn", pgq_dsn)
    assert bad.returncode == 2 and "not a duration: 'soon'" in bad.stderr

    assert cli_json(capsys, "workers", *d) == []
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute(
            "SELECT pgq.register_worker('7f0e8d5a-0000-4000-8000-000000000001', '{pr.a}',"
            " host => 'box', pid => 7)"
        )
    [worker] = cli_json(capsys, "workers", *d)  # type: ignore[misc]
    assert (worker["state"], worker["host"], worker["pid"]) == ("active", "box", 7)
    assert main(["workers", "--plain", *d]) == 0
    out = capsys.readouterr().out
    assert "7f0e8d5a-0000-4000-8000-000000000001" in out and "active" in out and "box" in out


def test_enqueue_json(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    data = cli_json(capsys, "enqueue", "js.e", '{"a": 1}', "--dsn", pgq_dsn)
    assert isinstance(data, dict) and isinstance(data["id"], int)


def test_jobs_and_history_pages(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = ("--dsn", pgq_dsn)
    for n in range(5):
        main(["enqueue", "ls.a", json.dumps({"n": n}), "--priority", str(n), *d])
    ids = [int(i) for i in capsys.readouterr().out.split()]
    first = cli_json(capsys, "jobs", "ls.a", "queued", "--page-size", "3", *d)
    assert isinstance(first, dict)
    assert [j["id"] for j in first["jobs"]] == ids[::-1][:3]  # claim order: priority first
    after = ("--after", first["next_cursor"], "--page-size", "3")
    rest = cli_json(capsys, "jobs", "ls.a", "queued", *after, *d)
    assert isinstance(rest, dict) and [j["id"] for j in rest["jobs"]] == ids[::-1][3:]
    assert rest["next_cursor"] is None
    assert main(["jobs", "ls.a", "queued", "--page-size", "2", "--plain", *d]) == 0
    out, err = capsys.readouterr()
    assert str(ids[-1]) in out and "next page: --after " in err
    # A page that happens to end exactly at the last job offers no next page (nor --json).
    full = cli_json(capsys, "jobs", "ls.a", "queued", "--page-size", "5", *d)
    assert isinstance(full, dict) and len(full["jobs"]) == 5 and full["next_cursor"] is None
    assert main(["jobs", "ls.a", "queued", "--page-size", "5", "--plain", *d]) == 0
    assert "next page" not in capsys.readouterr().err
    assert main(["jobs", "ls.a", "queued", "--plain", *d]) == 0  # the default page size
    assert "next page" not in capsys.readouterr().err

    dead = fail_all(pgq_dsn, "ls.a", "Timeout", "slow smtp")
    page = cli_json(capsys, "history", "--entrypoint", "ls.a", "--error", "smtp", *d)
    assert isinstance(page, dict) and sorted(j["id"] for j in page["jobs"]) == dead
    none = cli_json(capsys, "history", "--status", "successful", "--since", "1h", *d)
    assert none == {"jobs": [], "next_cursor": None}
    bad = run_cli("jobs", "ls.a", "sleeping", "--dsn", pgq_dsn)
    assert bad.returncode == 2 and "invalid choice: 'sleeping'" in bad.stderr


def test_a_closed_pipe_ends_quietly(pgq_dsn: str) -> None:
    """``pgq-thin history --json | head -1``: the reader goes away after one line; the command
    ends with 141 (128 + SIGPIPE) and no traceback."""
    for n in range(300):
        main(["enqueue", "pipe.a", json.dumps({"n": n, "pad": "x" * 200}), "--dsn", pgq_dsn])
    cmd = [sys.executable, "-m", "pgq_thin", "jobs", "pipe.a", "queued", "--json"]
    proc = subprocess.Popen(
        [*cmd, "--page-size", "300", "--dsn", pgq_dsn],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=APP_DIR,
    )
    assert proc.stdout is not None and proc.stderr is not None
    assert proc.stdout.readline() == b"{\n"
    proc.stdout.close()  # what head does after its first line
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=60) == 141, err
    assert err == ""


def test_schedules_fire_now(pgq_dsn: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = ("--dsn", pgq_dsn)
    assert main(["schedules", "add", "fire.me", "fire.ep", "0 3 * * *", '{"r": 1}', *d]) == 0
    capsys.readouterr()
    [before] = cli_json(capsys, "schedules", *d)  # type: ignore[misc]
    assert main(["schedules", "fire", "fire.me", *d]) == 0
    out = capsys.readouterr().out
    job_id = int(out.rsplit("job ", 1)[1])
    assert out == f"fired schedule 'fire.me': job {job_id}\n"
    with psycopg.connect(pgq_dsn) as conn:
        assert conn.execute(
            "SELECT entrypoint, payload FROM pgq.jobs WHERE id = %s", (job_id,)
        ).fetchone() == ("fire.ep", {"r": 1})
    [after] = cli_json(capsys, "schedules", *d)  # type: ignore[misc]
    assert after["next_run_at"] == before["next_run_at"]  # the next tick is not moved
    fired = cli_json(capsys, "schedules", "fire", "fire.me", *d)
    assert isinstance(fired, dict) and fired["schedule"] == "fire.me" and fired["job_id"] > job_id
    result = run_cli("schedules", "fire", "fire.nope", "--dsn", pgq_dsn)
    assert "no schedule 'fire.nope'" in one_line_error(result)


def test_one_duration_format_in_every_table(
    pgq_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from pgq_thin.cli._output import duration_text

    assert [duration_text(s) for s in (0.0042, 0.25, 4.7, 30, 175, 300, 7500, 273600)] == [
        "0.004s", "0.25s", "4.7s", "30s", "2m55s", "5m00s", "2h05m", "3d04h"
    ]  # fmt: skip
    d = ("--dsn", pgq_dsn)
    main(["configure", "dur.a", "--backoff-base", "1s", "--backoff-max", "5m", *d])
    main(["enqueue", "dur.a", *d])
    capsys.readouterr()
    assert main(["status", "--plain", *d]) == 0
    status = capsys.readouterr().out
    assert "30s" in status  # heartbeat_timeout, an interval
    assert main(["configure", "dur.a", "--plain", *d]) == 0
    policy = capsys.readouterr().out.splitlines()[-1].split()
    assert policy[2:5] == ["1s", "5m00s", "30s"], policy  # no concurrency limit: a blank
    assert main(["prune", "--older-than", "30d", *d]) == 0
    assert capsys.readouterr().out == "deleted 0 finished job(s) older than 30d00h\n"


def test_an_import_error_in_the_handler_module_is_one_line(pgq_dsn: str, tmp_path: Path) -> None:
    (tmp_path / "brokenapp.py").write_text("import os\nimport no_such_package_here\n")
    (tmp_path / "raisingapp.py").write_text("CONFIG = {}\nURL = CONFIG['url']\n")
    result = run_cli("run", "brokenapp:worker", "--dsn", pgq_dsn, cwd=tmp_path)
    line = one_line_error(result)
    assert result.returncode == 1
    assert line.startswith(
        "pgq-thin run: importing brokenapp failed: ModuleNotFoundError: "
        "No module named 'no_such_package_here' ("
    ) and line.endswith("brokenapp.py, line 2); --log-level DEBUG shows the traceback")
    result = run_cli("run", "raisingapp:worker", "--dsn", pgq_dsn, cwd=tmp_path)
    assert "importing raisingapp failed: KeyError: 'url' (" in one_line_error(result)
    assert "raisingapp.py, line 2)" in result.stderr
    debug = run_cli(
        "run", "raisingapp:worker", "--log-level", "DEBUG", "--dsn", pgq_dsn, cwd=tmp_path
    )
    assert debug.returncode == 1 and "Traceback" in debug.stderr


def test_status_names_an_entrypoint_nobody_serves(
    pgq_dsn: str, capsys: pytest.CaptureFixture[str]
) -> None:
    d = ("--dsn", pgq_dsn)
    main(["enqueue", "send_email", *d])
    main(["enqueue", "send_emial", *d])  # the typo: no worker will ever serve it
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.register_worker(gen_random_uuid(), ARRAY['send_email'])")
    capsys.readouterr()
    assert main(["status", "--plain", *d]) == 0
    out, err = capsys.readouterr()
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert rows["send_email"][-1] == "True"  # served, nothing in the unserved column
    assert rows["send_emial"][-2] == "False" and rows["send_emial"][-1].endswith("s")
    [line] = err.splitlines()
    assert line.startswith("pgq-thin status: no live worker serves 'send_emial' (1 due, for ")
    assert line.endswith("): check the name, or start a worker that runs it")
    data = cli_json(capsys, "status", *d)
    assert isinstance(data, list)
    served = {r["entrypoint"]: (r["served"], r["unserved_s"] is None) for r in data}
    assert served == {"send_email": (True, True), "send_emial": (False, False)}
