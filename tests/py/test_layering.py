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


# --- no queue decision in Python (issue: policy back in SQL) -----------------------------------
# SQL decides, Python loops. A test cannot read intent, but it can forbid the shapes a decision
# takes: choosing a job status, arithmetic on attempts, due times on the client's clock, and
# SQL's defaults repeated as constants.

REPO = PACKAGE.parent
#: Every status a job has or SQL answers, and every outcome a worker reports.
STATUS_WORDS = {
    "queued",
    "running",
    "scheduled",
    "retry",
    "dead",
    "successful",
    "failed",
    "canceled",
    "interrupted",
}
#: The outcomes a worker reports (pgq_thin/worker/_results.py), checked against pgq.complete.
OUTCOME_CONSTANTS = {"SUCCESSFUL", "FAILED", "INTERRUPTED", "CANCELED"}
POLICY_COLUMNS = ("heartbeat_timeout", "max_attempts", "backoff", "concurrency_limit")


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _named_constant(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Inside the value of an assignment to UPPER_CASE names (a named constant)."""
    while id(node) in parents:
        node = parents[id(node)]
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return all(isinstance(t, ast.Name) and t.id.isupper() for t in targets)
        if isinstance(node, ast.stmt):
            return False
    return False


def _outcome_label(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """An outcome label for logs and metrics: the third argument of ``Ending(...)``, or
    compared with an ``.outcome``."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
        return parent.func.id == "Ending" and parent.args[2:3] == [node]
    if isinstance(parent, ast.Compare):
        operands = [parent.left, *parent.comparators]
        return any(isinstance(o, ast.Attribute) and o.attr == "outcome" for o in operands)
    return False


def _worker_files() -> list[Path]:
    return sorted((PACKAGE / "worker").glob("*.py"))


def test_the_worker_chooses_no_status() -> None:
    """In the worker a status word appears only as a named constant (what it reports, what it
    reads in SQL's answer) or an outcome label; what it reports is one of those constants,
    never an expression that picks one."""
    offenders = []
    for path in _worker_files():
        tree = ast.parse(path.read_text())
        parents = _parents(tree)
        where = path.relative_to(REPO)
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and node.value in STATUS_WORDS
                and not _named_constant(node, parents)
                and not _outcome_label(node, parents)
            ):
                offenders.append(f"{where}:{node.lineno}: {node.value!r}")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                status = {"Ending": node.args[:1], "Result": node.args[2:3]}.get(node.func.id)
                passed_through = isinstance(status[0], ast.Attribute) if status else False
                if status and not passed_through and not (
                    isinstance(status[0], ast.Name) and status[0].id in OUTCOME_CONSTANTS
                ):
                    offenders.append(f"{where}:{node.lineno}: {node.func.id} status chosen")
    assert offenders == [], "status chosen in the worker:\n" + "\n".join(offenders)


def test_the_outcomes_a_worker_reports_are_those_pgq_complete_accepts() -> None:
    from pgq_thin.worker import _results

    sql = (REPO / "sql" / "functions" / "complete.sql").read_text()
    accepted = re.search(r"NOT IN \(([^)]*)\)", sql)
    assert accepted is not None
    assert {getattr(_results, name) for name in OUTCOME_CONSTANTS} == set(
        re.findall(r"'(\w+)'", accepted.group(1))
    )


def test_no_arithmetic_or_comparison_on_attempts() -> None:
    """Whether an attempt is the last, or what comes next, is SQL's answer (last_attempt,
    pgq.complete's status): Python never computes with attempt numbers. The demo's handler is
    user code (it fails on purpose a number of times)."""
    names = {"attempt", "attempts", "max_attempts"}

    def is_attempt(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id in names) or (
            isinstance(node, ast.Attribute) and node.attr in names
        )

    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.relative_to(PACKAGE).as_posix() == "cli/demo.py":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            operands: list[ast.AST] = []
            if isinstance(node, ast.BinOp):
                operands = [node.left, node.right]
            elif isinstance(node, ast.Compare) and not all(
                isinstance(op, ast.Is | ast.IsNot | ast.In | ast.NotIn) for op in node.ops
            ):
                operands = [node.left, *node.comparators]
            elif isinstance(node, ast.AugAssign):
                operands = [node.target]
            if any(is_attempt(o) for o in operands):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == [], "arithmetic on attempts in Python: " + ", ".join(offenders)


def test_no_queue_time_on_the_client_clock() -> None:
    """Due times, delays and retries are resolved on the server's clock: the producer and the
    worker never read the wall clock for a job (the cron scheduler computes a schedule's next
    tick with croniter, as DESIGN.md says, and is not checked here)."""
    checked = [PACKAGE / "queue.py", PACKAGE / "job.py", PACKAGE / "calls.py", *_worker_files()]
    offenders = []
    for path in checked:
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in {"now", "utcnow", "today"}
            ):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == [], "the client's clock used for a job: " + ", ".join(offenders)


def test_no_sql_default_repeated_in_python() -> None:
    """The entrypoint policy (heartbeat timeout, attempts, backoff, limits) lives in
    pgq.entrypoints and reaches the worker in the claim answer: no DEFAULT_* constant of it."""
    offenders = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id.lower()
                if "default" in name and any(c in name for c in POLICY_COLUMNS):
                    offenders.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.id}")
    assert offenders == [], "SQL policy defaults repeated in Python:\n" + "\n".join(offenders)


def test_the_decision_scanners_find_decisions(tmp_path: Path) -> None:
    """The scanners above catch the shapes they forbid."""
    sample = ast.parse(
        "x = 'failed' if job.attempt >= job.max_attempts else 'queued'\n"
        "e = Ending('canceled', None, 'canceled')\n"
        "OK = 'successful'\n"
    )
    parents = _parents(sample)
    words = [
        n
        for n in ast.walk(sample)
        if isinstance(n, ast.Constant) and n.value in STATUS_WORDS
        if not _named_constant(n, parents) and not _outcome_label(n, parents)
    ]
    assert [w.value for w in words] == ["failed", "queued", "canceled"]
    compares = [n for n in ast.walk(sample) if isinstance(n, ast.Compare)]
    assert len(compares) == 1
