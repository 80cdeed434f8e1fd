"""``make dist`` builds the sdist and the wheel; the wheel, installed into a clean virtualenv
away from this checkout, carries the SQL and works: the schema installs, a worker runs jobs,
the CLI answers, the Alembic and testing helpers import (the smoke test CI runs: it is part of
``make test``)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import psycopg
import pytest
from helpers.server import REPO

from pgq_thin import __version__, migrate, sqlfiles

WEB = REPO / "pgq_thin" / "web"

SMOKE = '''\
"""A producer and a worker of an application that installed the wheel (no checkout around)."""
import sys
from dataclasses import dataclass

from pgq_thin import Job, Queue, ThinWorker, migrate, sqlfiles

dsn = sys.argv[1]
worker = ThinWorker(dsn, poll_interval=0.05)


@dataclass
class Add:
    a: int
    b: int


@worker.entrypoint("add")
def add(job: Job[Add]) -> int:
    return job.payload.a + job.payload.b


with Queue(dsn) as queue:
    ids = [add.enqueue(queue, Add(i, i)) for i in range(5)]
    worker.run(until_empty=True)
    print("results", [queue.result(i).result for i in ids])
print("sql", sqlfiles.sql_dir())
print("script", len(migrate.sql().splitlines()) > 100)
import pgq_thin.alembic, pgq_thin.testing  # noqa: E401,F401  the optional helpers load
print("helpers ok")
'''


def run(*command: str | Path, cwd: Path, timeout: float = 600) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PGQ_DSN", "VIRTUAL_ENV")}
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
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    run("make", "--no-print-directory", "dist", f"DIST={out}", f"PYTHON={sys.executable}",
        cwd=REPO)  # fmt: skip
    return out


@pytest.fixture(scope="module")
def wheel(dist: Path) -> Path:
    (built,) = dist.glob("pgq_thin-*.whl")
    assert built.name == f"pgq_thin-{__version__}-py3-none-any.whl"
    return built


def test_wheel_contents(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    expected = {
        "pgq_thin/py.typed",
        "pgq_thin/migrate.py",
        "pgq_thin/_migrate_runner.py",
        "pgq_thin/alembic.py",
        "pgq_thin/testing.py",
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
    assert not any(n.startswith("tests/") for n in names)
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "pgq-thin = pgq_thin.cli:main" in text


def test_sdist_contents(dist: Path) -> None:
    (sdist,) = dist.glob("pgq_thin-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {n.split("/", 1)[1] for n in archive.getnames() if "/" in n}
    expected = {
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        *(f"sql/migrations/{m.name}" for m in sqlfiles.migrations()),
        "sql/migrations/RELEASED",
    }
    assert expected <= names, f"missing from the sdist: {sorted(expected - names)}"


@pytest.mark.slow
def test_installed_wheel_smoke(wheel: Path, empty_db_dsn: str, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    run(sys.executable, "-m", "venv", venv, cwd=tmp_path)
    python, command = venv / "bin" / "python", venv / "bin" / "pgq-thin"
    run(python, "-m", "pip", "install", "--quiet", f"{wheel}[testing]", cwd=tmp_path)

    out = run(command, "install", "--dsn", empty_db_dsn, cwd=tmp_path)
    assert f"installed pgq-thin schema at revision {migrate.head()}" in out
    assert run(command, "--version", cwd=tmp_path).strip() == f"pgq-thin {__version__}"
    version = run(command, "version", "--dsn", empty_db_dsn, cwd=tmp_path)
    assert "(up to date)" in version

    (tmp_path / "smoke.py").write_text(SMOKE)
    lines = run(python, "smoke.py", empty_db_dsn, cwd=tmp_path).splitlines()
    assert lines[0] == "results [0, 2, 4, 6, 8]"
    located = Path(lines[1].removeprefix("sql "))
    assert located.is_relative_to(venv), located  # the packaged copy, not the checkout
    assert lines[2:] == ["script True", "helpers ok"]

    status = run(command, "history", "--dsn", empty_db_dsn, "--status", "successful", "--json",
                 cwd=tmp_path)  # fmt: skip
    assert status.count('"entrypoint": "add"') == 5
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        job = conn.execute("SELECT pgq.enqueue('wheel_check')").fetchone()
        assert job is not None and job[0] > 0
    assert migrate.current(empty_db_dsn) == migrate.head()
