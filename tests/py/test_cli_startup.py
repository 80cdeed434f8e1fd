"""The light ``pgq-thin`` commands start light: ``--help``, ``--version``, ``status``, ``show``,
the listings and the steering commands import neither SQLAlchemy nor Alembic (the migrations),
nor the worker, nor rich (``top`` and ``demo`` need it; tables are drawn without it).

Each command runs in a new interpreter (what a user's shell does), which then writes the
modules it loaded to a file. The start-up figures are in docs/performance.md
(``benchmarks/cli_startup.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = ("sqlalchemy", "alembic", "pgq_thin.worker", "pgq_thin.migrate", "rich", "croniter")
PROBE = """
import json, sys
from pgq_thin.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as exit:
    code = exit.code
with open(sys.argv[1], "w") as f:
    json.dump({"code": code, "modules": sorted(sys.modules)}, f)
"""


def loaded(tmp_path: Path, *args: str) -> tuple[int, set[str]]:
    out = tmp_path / "modules.json"
    subprocess.run(
        [sys.executable, "-c", PROBE, str(out), *args],
        env={**os.environ, "PGQ_THIN_DATA": "/nonexistent/pgq-thin-test"},
        capture_output=True,
        check=True,
        timeout=60,
    )
    data = json.loads(out.read_text())
    heavy = {m for m in data["modules"] for h in HEAVY if m == h or m.startswith(h + ".")}
    return data["code"], heavy


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["--version"],
        ["status"],
        ["status", "--json"],
        ["show", "{job}"],
        ["jobs", "light.a", "queued"],
        ["history", "--since", "1h"],
        ["workers"],
        ["failed"],
        ["cancel", "{job}"],
        ["schedules"],
    ],
)
def test_light_commands_import_no_heavy_module(
    pgq_dsn: str, tmp_path: Path, args: list[str]
) -> None:
    import psycopg

    with psycopg.connect(pgq_dsn) as conn:
        (job,) = conn.execute("SELECT pgq.enqueue('light.a')").fetchone()
    argv = [a.format(job=job) for a in args]
    code, heavy = loaded(tmp_path, *argv, *(["--dsn", pgq_dsn] if argv[0][0] != "-" else []))
    assert code == 0
    assert heavy == set()


def test_the_schema_commands_still_load_the_migrations(pgq_dsn: str, tmp_path: Path) -> None:
    """The check above can fail: ``install`` does load Alembic (and ``version`` compares the
    schema with the package's head, so it does too)."""
    code, heavy = loaded(tmp_path, "install", "--dsn", pgq_dsn)
    assert code == 0 and {"sqlalchemy", "alembic", "pgq_thin.migrate"} <= heavy
