"""All SQL text of the package lives in pgq_thin/calls.py and, for the admin API,
pgq_thin/admin_calls.py (DESIGN.md section 3).

Every string literal outside the allowed modules is scanned for SQL statements; docstrings
are prose and skipped. ``migrate.py`` is allowed for its schema bootstrap statements only
(advisory lock, schema guard, version table), which are not queue logic.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pgq_thin"
ALLOWED = {"calls.py", "admin_calls.py", "dashboard_calls.py", "migrate.py"}
SQL = re.compile(
    r"\b(SELECT|INSERT|UPDATE|DELETE|LISTEN|UNLISTEN|NOTIFY|CREATE|DROP|ALTER|TRUNCATE|"
    r"COPY|GRANT|REVOKE|BEGIN|COMMIT|ROLLBACK|WITH\s+\w+\s+AS)\s",
)


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                ids.add(id(body[0].value))
    return ids


def _sql_strings(path: Path, root: Path = PACKAGE.parent) -> list[str]:
    tree = ast.parse(path.read_text(), filename=str(path))
    skip = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in skip
            and SQL.search(node.value)
        ):
            found.append(f"{path.relative_to(root)}:{node.lineno}: {node.value!r}")
    return found


def test_sql_text_only_in_the_calls_module() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() in ALLOWED:
            continue
        offenders += _sql_strings(path)
    assert offenders == [], "SQL text outside pgq_thin/calls.py:\n" + "\n".join(offenders)


# Modules that may send statements themselves: the calls, the schema bootstrap, and the
# Alembic glue that runs the shipped .sql migration files verbatim (no SQL text of its own).
EXECUTORS = ALLOWED | {"migrations/__init__.py"}


def test_no_direct_execute_outside_the_calls_module() -> None:
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() in EXECUTORS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"execute", "executemany", "exec_driver_sql"}
            ):
                offenders.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert offenders == [], "statements sent outside pgq_thin/calls.py: " + ", ".join(offenders)


def test_the_scanner_finds_sql(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text('"""SELECT in a docstring is prose."""\nQ = "SELECT * FROM pgq.jobs"\n')
    hits = _sql_strings(sample, root=tmp_path)
    assert len(hits) == 1 and "pgq.jobs" in hits[0]
