"""Every tests/sql/*.sql file is one test: run with psql against a fresh installed clone that
has pgTAP, its TAP output parsed; any ``not ok``, a plan mismatch or a psql error fails it."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.server import REPO, PgServer
from helpers.tap import parse

SQL_TESTS = sorted((REPO / "tests" / "sql").glob("*.sql"))


@pytest.mark.parametrize("path", SQL_TESTS, ids=[p.name for p in SQL_TESTS])
def test_pgtap(path: Path, pg_server: PgServer, pgtap_db_dsn: str) -> None:
    result = pg_server.psql(
        pgtap_db_dsn, "-q", "-t", "-A", "-P", "pager=off", "-f", str(path), check=False
    )
    tap = parse(result.stdout)
    problems = tap.problems()
    if result.returncode != 0:
        problems.insert(0, f"psql exited with {result.returncode}")
    if problems:
        pytest.fail(
            f"{path.name}: "
            + "; ".join(problems)
            + "\n--- TAP output ---\n"
            + result.stdout
            + "\n--- psql stderr ---\n"
            + result.stderr,
            pytrace=False,
        )
    assert tap.ran > 0
