"""Golden files: committed text that a fresh install must reproduce exactly, so a reviewer sees
every change of the installed schema and of the documented psql session in a diff.

- ``sql/schema.snapshot``: schema pgq at head as readable text (``helpers.catalog.readable``).
- ``sql/api.json``: the public SQL API (``helpers.catalog.api_manifest``), and
  ``pgq_thin/_api.py``, the Python statement layer ``scripts/gen_api.py`` generates from it.
- ``docs/examples/lifecycle.out``: ``docs/examples/lifecycle.sql`` run by psql (echoing each
  statement) against a fresh install, with process ids and timestamps normalized.

Both are the same on every supported PostgreSQL version. When a change is intended, regenerate
them with ``make golden`` (``PGQ_UPDATE_GOLDEN=1`` makes these tests write the files instead of
comparing), review the diff and commit it.
"""

from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import catalog
from helpers.server import REPO, PgServer

from pgq_thin import migrate

SNAPSHOT = REPO / "sql" / "schema.snapshot"
API = REPO / "sql" / "api.json"
LIFECYCLE = REPO / "docs" / "examples" / "lifecycle.sql"
LIFECYCLE_OUT = REPO / "docs" / "examples" / "lifecycle.out"
REGENERATE = "make golden"


def _updating() -> bool:
    return os.environ.get("PGQ_UPDATE_GOLDEN", "") not in ("", "0")


def check_golden(path: Path, actual: str, title: re.Pattern[str]) -> None:
    """Compare ``actual`` with the committed ``path`` (or write it under PGQ_UPDATE_GOLDEN=1);
    lines matching ``title`` name the diff's hunks."""
    relative = path.relative_to(REPO)
    if _updating():
        path.write_text(actual)
        return
    expected = path.read_text() if path.exists() else ""
    if actual == expected:
        return
    diff = golden_diff(expected, actual, str(relative), title)
    pytest.fail(
        f"{relative} differs from what a fresh install gives:\n{diff}\n\n"
        f"If the change is intended, run `{REGENERATE}` (or "
        f"`PGQ_TEST_DSN=... {REGENERATE}`), review the diff and commit {relative}.",
        pytrace=False,
    )


def golden_diff(expected: str, actual: str, name: str, title: re.Pattern[str]) -> str:
    """A unified diff whose hunk headers name the block they are in (the last line above the
    hunk that matches ``title``), as ``git diff`` names the enclosing function."""
    old = expected.splitlines()
    out = []
    for line in difflib.unified_diff(
        old, actual.splitlines(), f"{name} (committed)", f"{name} (this install)", lineterm=""
    ):
        hunk = re.match(r"@@ -(\d+)", line)
        if hunk:
            start = int(hunk[1]) - 1
            above = (t for t in reversed(old[: start + 1]) if title.match(t))
            line = f"{line} {next(above, '')}".rstrip()
        out.append(line)
    return "\n".join(out)


# --- sql/schema.snapshot ----------------------------------------------------------------------


def snapshot_header() -> str:
    return "\n".join(
        [
            f"# Schema pgq as installed at revision {migrate.head()}, rendered by "
            "tests/py/helpers/catalog.py.",
            f"# Checked by tests/py/test_golden.py; regenerate with `{REGENERATE}`.",
            "# Function bodies are in sql/functions/ (the suite proves the installed ones equal",
            "# those files); everything else about each object is here.",
            *(f"# {line}" for line in _wrap(catalog.NORMALIZED, 88)),
        ]
    )


def _wrap(text: str, width: int) -> list[str]:
    lines: list[str] = []
    for word in text.split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def test_schema_snapshot_matches_a_fresh_install(pgq_dsn: str) -> None:
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        actual = catalog.readable(conn, snapshot_header())
    check_golden(SNAPSHOT, actual, re.compile(r"[a-z]"))


# --- sql/api.json and the statement layer generated from it ---------------------------------


def api_json(conn: psycopg.Connection[Any]) -> str:
    manifest = {
        "about": (
            "The public SQL API of schema pgq at this revision: per function its arguments, "
            "result columns, the roles granted EXECUTE and its comment; per readable relation "
            "its columns and the roles granted SELECT. Generated from a fresh install by "
            f"tests/py/helpers/catalog.py (`{REGENERATE}`); see docs/any-language.md."
        ),
        "revision": migrate.head(),
        **catalog.api_manifest(conn),
    }
    return json.dumps(manifest, indent=2, ensure_ascii=False) + "\n"


def test_api_manifest_matches_a_fresh_install(pgq_dsn: str) -> None:
    with psycopg.connect(pgq_dsn, autocommit=True) as conn:
        actual = api_json(conn)
    check_golden(API, actual, re.compile(r'    "\w+": \{'))


def test_generated_statement_layer_is_the_manifest() -> None:
    """pgq_thin/_api.py is what scripts/gen_api.py makes of the committed sql/api.json (under
    PGQ_UPDATE_GOLDEN=1, after the test above rewrote it, it is written again)."""
    gen_api = _gen_api()
    check_golden(gen_api.TARGET, gen_api.render(json.loads(API.read_text())), re.compile("def "))


def _gen_api() -> Any:
    spec = importlib.util.spec_from_file_location("gen_api", REPO / "scripts" / "gen_api.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# --- docs/examples/lifecycle.sql --------------------------------------------------------------

_NORMALIZE = [
    (re.compile(r"(received from server process with PID )\d+"), r"\1<pid>"),
    (
        re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(\.\d+)?([+-]\d\d(:\d\d)?)?"),
        "<timestamp>",
    ),
]


def normalize_psql(text: str) -> str:
    for pattern, replacement in _NORMALIZE:
        text = pattern.sub(replacement, text)
    return "\n".join(line.rstrip() for line in text.splitlines()) + "\n"


def run_lifecycle(pg_server: PgServer, dsn: str) -> str:
    result = pg_server.psql(
        dsn,
        "-a",
        "-P",
        "pager=off",
        "-v",
        "VERBOSITY=default",
        "-f",
        str(LIFECYCLE.relative_to(REPO)),
        check=False,
        merge_stderr=True,
        env={"PGTZ": "UTC", "LC_MESSAGES": "C"},
    )
    assert result.returncode == 0, (
        f"{LIFECYCLE.relative_to(REPO)} stopped with an error (psql exit code "
        f"{result.returncode}):\n{result.stdout[-3000:]}"
    )
    return normalize_psql(result.stdout)


def test_lifecycle_example_runs_and_prints_the_committed_output(
    pg_server: PgServer, pgq_dsn: str
) -> None:
    check_golden(LIFECYCLE_OUT, run_lifecycle(pg_server, pgq_dsn), re.compile(r"-- \d+\. "))


def test_normalization_keeps_what_matters() -> None:
    raw = (
        'Asynchronous notification "pgq_events" with payload "{}" received from server '
        "process with PID 10755.\n at 2026-11-30 12:00:01.123+01   \n id | 1\n"
    )
    assert normalize_psql(raw) == (
        'Asynchronous notification "pgq_events" with payload "{}" received from server '
        "process with PID <pid>.\n at <timestamp>\n id | 1\n"
    )
