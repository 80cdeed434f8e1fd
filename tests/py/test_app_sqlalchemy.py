"""A SQLAlchemy application (tests/py/apps/sqlalchemy_app: an ORM model, a service that places
an order and enqueues its shipping through a typed handle in the ORM session's transaction, a
worker) runs its own test suite with ``pgq_thin.testing``, on psycopg 3 and on psycopg2, as
its developers would: ``python -m pytest`` in the application's folder (a copy, so nothing of
this repository's suite is loaded)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from helpers.apps import APPS, clean_env, tool
from helpers.server import PgServer


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_the_apps_own_suite_passes(pg_server: PgServer, tmp_path: Path, driver: str) -> None:
    app = tmp_path / "sqlalchemy_app"
    shutil.copytree(APPS / "sqlalchemy_app", app)
    result = tool(
        "python",
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        cwd=app,
        env=clean_env(PGQ_TEST_DSN=pg_server.conninfo, APP_DRIVER=driver),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "4 passed" in result.stdout, result.stdout


def test_the_plugin_without_a_server_says_how_to_name_one(tmp_path: Path) -> None:
    app = tmp_path / "sqlalchemy_app"
    shutil.copytree(APPS / "sqlalchemy_app", app)
    result = tool(
        "python", "-m", "pytest", "-q", "-p", "no:cacheprovider", cwd=app, env=clean_env()
    )
    assert result.returncode != 0
    assert (
        "pgq_thin.testing: no PostgreSQL server for the test databases: set PGQ_TEST_DSN (a role "
        "with CREATEDB) or pass --pgq-server DSN ('embedded' for the embedded development server)"
    ) in result.stdout + result.stderr
