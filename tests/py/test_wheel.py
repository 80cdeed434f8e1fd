"""The built wheel carries the SQL and migrates a database when installed non-editable."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import psycopg
import pytest
from helpers.server import REPO

from pgq_thin import migrate, sqlfiles

WEB = REPO / "pgq_thin" / "web"


def run(*command: str | Path, cwd: Path, timeout: float = 600) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PGQ_DSN")}
    result = subprocess.run(
        [str(c) for c in command],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"{command} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", out, REPO, cwd=out)
    (built,) = out.glob("pgq_thin-*.whl")
    return built


def test_wheel_contents(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        "pgq_thin/py.typed",
        "pgq_thin/migrate.py",
        "pgq_thin/_migrate_runner.py",
        "pgq_thin/migrations/env.py",
        *(f"pgq_thin/_sql/migrations/{m.name}" for m in sqlfiles.migrations()),
        *(f"pgq_thin/_sql/functions/{p.name}" for p in sqlfiles.function_files()),
        # the dashboard's templates and assets, served by the package itself
        *(
            f"pgq_thin/web/{p.relative_to(WEB).as_posix()}"
            for p in [*WEB.glob("templates/*"), *WEB.glob("static/*")]
        ),
    }
    assert expected <= names, f"missing from the wheel: {sorted(expected - names)}"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "pgq-thin = pgq_thin.cli:main" in text


@pytest.mark.slow
def test_installed_wheel_migrates_a_fresh_database(
    wheel: Path, empty_db_dsn: str, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python, command = venv / "bin" / "python", venv / "bin" / "pgq-thin"
    run(python, "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)

    located = run(python, "-c", "import pgq_thin.sqlfiles as s; print(s.sql_dir())", cwd=tmp_path)
    assert Path(located.strip()).is_relative_to(venv), located  # the packaged copy, not the repo

    out = run(command, "install", "--dsn", empty_db_dsn, cwd=tmp_path)
    assert f"installed pgq-thin schema at revision {migrate.head()}" in out
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_proc"
            " WHERE pronamespace = 'pgq'::regnamespace AND proname = 'enqueue'"
        ).fetchone()
        assert row is not None and row[0] >= 1
        job = conn.execute("SELECT pgq.enqueue('wheel_check')").fetchone()
        assert job is not None and job[0] > 0
    assert migrate.current(empty_db_dsn) == migrate.head()
