"""The real applications of the suite (tests/py/apps/): how to reach a test database from them
and how to run their own tools (``alembic``, ``manage.py``) as subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict
from sqlalchemy.engine import URL

APPS = Path(__file__).resolve().parents[1] / "apps"
BIN = Path(sys.executable).parent


def sqlalchemy_url(dsn: str, driver: str = "psycopg") -> str:
    """The SQLAlchemy URL of a libpq DSN (a unix-socket host goes in the query)."""
    params = conninfo_to_dict(dsn)
    host = str(params.get("host") or "")
    query = {"host": host} if host.startswith("/") else {}
    url = URL.create(
        f"postgresql+{driver}",
        username=str(params.get("user") or "postgres"),
        password=str(params["password"]) if params.get("password") else None,
        host=None if query or not host else host,
        port=int(params["port"]) if params.get("port") else None,
        database=str(params["dbname"]),
        query=query,
    )
    return url.render_as_string(hide_password=False)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment of an application's process: no database chosen behind its back."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("PGQ_DSN", "PGQ_TEST_DSN", "PYTHONPATH") and not k.startswith("APP_")
    }
    env.update(extra)
    return env


def tool(
    name: str, *args: str, cwd: Path, env: dict[str, str], timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """Run a console script of this virtualenv (``alembic``) or ``python`` in ``cwd``."""
    command = [sys.executable if name == "python" else str(BIN / name), *args]
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
