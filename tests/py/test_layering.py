"""SQL decides, Python loops (docs/architecture.md, "Principles"): the shapes that would put
queue logic in the Python package are forbidden here, and the behaviour is proven by
tests/py/test_outcome_matrix.py (the same cases through the Python, Node.js and psql workers
leave the same history).

All SQL text of the package lives in its statement modules (pgq_thin/calls.py,
pgq_thin/admin_calls.py, the generated pgq_thin/_api.py and its parts).

Every string literal outside the allowed modules is scanned for SQL statements; docstrings
are prose and skipped. ``migrate.py`` is allowed for its schema bootstrap statements only
(advisory lock, schema guard, version table), which are not queue logic; ``testing.py`` for
the test fixtures' CREATE and DROP DATABASE.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "pgq_thin"
ALLOWED = {"calls.py", "admin_calls.py", "_statements.py", "_api.py",
           "_sql_runner.py", "migrate.py", "testing.py"}  # fmt: skip
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
# ``_drivers.py`` sends the generated calls through an application's psycopg2, SQLAlchemy or
# Django object (no SQL text of its own either).
# ``contrib/django/_schema.py`` is the Django twin of the Alembic glue (it hands migrate's
# statements to Django's schema editor).
EXECUTORS = ALLOWED | {"migrations/__init__.py", "_drivers.py", "contrib/django/_schema.py"}


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
# takes, in the whole package: choosing a job status, arithmetic on attempts, due times on the
# client's clock, and SQL's defaults repeated as constants. The few uses a product surface makes
# of a status word or of the clock are listed below, each with its reason: a new one fails.

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
#: The outcomes a worker reports (pgq_thin/worker/_outcomes.py), checked against pgq.complete.
OUTCOME_CONSTANTS = {"SUCCESSFUL", "FAILED", "INTERRUPTED", "CANCELED", "SNOOZED", "FATAL"}
POLICY_COLUMNS = ("heartbeat_timeout", "max_attempts", "backoff", "concurrency_limit")
#: Nodes a named constant's value may be built of around a status word: literals only.
LITERAL_CONTAINERS = (ast.Tuple, ast.List, ast.Set, ast.Dict)
#: Calls a named constant may wrap its literals in.
LITERAL_WRAPPERS = {"frozenset", "tuple"}

#: (module, enclosing function or class, word) -> why a status word there chooses nothing.
STATUS_SURFACE = {
    ("cli/_demo_app.py", "_demo.render", "running"): "a column header of the demo's table",
    ("cli/steer.py", "_cmd_cancel", "canceled"): "the verb of the command's summary line",
    ("cli/steer.py", "_cmd_show", "successful"): "shows details unless SQL answered success",
    ("cli/steer.py", "_cmd_requeue", "failed"): "the statuses --canceled asks SQL to requeue",
    ("cli/steer.py", "_cmd_requeue", "canceled"): "the statuses --canceled asks SQL to requeue",
    ("cli/top.py", "render", "running"): "a column header",
    ("exporter.py", "queue_families", "successful"): "a metric label per history counter",
    ("exporter.py", "queue_families", "failed"): "a metric label per history counter",
    ("exporter.py", "queue_families", "canceled"): "a metric label per history counter",
    ("exporter.py", "queue_families", "running"): "a metric label per live counter",
    ("listener.py", "parse_event", "scheduled"): "a notification kind, not a job status",
    ("web/actions.py", "action.endpoint", "failed"): "how an operator's action went, not a job",
    ("web/pages.py", "entrypoint", "queued"): "the page's default filter",
    ("web/forms.py", "failed_filter", "failed"): "the failed-jobs filter's default",
}

#: (module, enclosing function or class) -> why a wall-clock read there is no job's time.
CLOCK_SURFACE = {
    ("scheduler.py", "Scheduler.register"): "a schedule's first cron tick (croniter)",
    ("admin.py", "Build.add_schedule"): "a schedule's first cron tick (croniter)",
    ("web/actions.py", "_remember"): "when an operator acted, shown on the dashboard",
    ("web/security.py", "*"): "the age of a session or a form token",
    ("cli/top.py", "*"): "the screen's clock",
    ("worker/_worker.py", "ThinWorker.arun"): "when the worker started (its uptime)",
}


def _parents(tree: ast.AST) -> dict[int, ast.AST]:
    return {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _scopes(tree: ast.AST) -> dict[int, str]:
    """Every node's enclosing function or class, as a dotted name (``<module>`` at the top)."""
    scope: dict[int, str] = {}

    def visit(node: ast.AST, name: str) -> None:
        for child in ast.iter_child_nodes(node):
            inner = name
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                inner = child.name if name == "<module>" else f"{name}.{child.name}"
            scope[id(child)] = inner
            visit(child, inner)

    visit(tree, "<module>")
    return scope


def _named_constant(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """A literal in a named constant: the value of an assignment to UPPER_CASE names, built of
    literals only (tuples, lists, sets, dicts), so that nothing in it picks one value or another
    (``STATUS = "failed" if bad else "queued"`` is no constant)."""
    while id(node) in parents:
        node = parents[id(node)]
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return all(isinstance(t, ast.Name) and t.id.isupper() for t in targets)
        wrapper = isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        wrapped = wrapper and node.func.id in LITERAL_WRAPPERS  # type: ignore[attr-defined]
        if not (isinstance(node, LITERAL_CONTAINERS) or wrapped):
            return False
    return False


def _literal_type(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """Inside ``Literal[...]``: a type, which chooses nothing."""
    while id(node) in parents:
        node = parents[id(node)]
        if isinstance(node, ast.Subscript):
            value = node.value
            return (isinstance(value, ast.Name) and value.id == "Literal") or (
                isinstance(value, ast.Attribute) and value.attr == "Literal"
            )
        if not isinstance(node, ast.Tuple):
            return False
    return False


def _outcome_label(node: ast.AST, parents: dict[int, ast.AST]) -> bool:
    """An outcome label for logs and metrics: the third argument of ``Ending(...)``, or
    compared with an outcome (a name or attribute ending in ``outcome``: ``.log_outcome``)."""
    parent = parents.get(id(node))
    if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name):
        return parent.func.id == "Ending" and parent.args[2:3] == [node]
    if isinstance(parent, ast.Compare):
        operands = [parent.left, *parent.comparators]
        return any(
            (isinstance(o, ast.Attribute) and o.attr.endswith("outcome"))
            or (isinstance(o, ast.Name) and o.id.endswith("outcome"))
            for o in operands
        )
    return False


def _modules() -> list[tuple[str, ast.Module]]:
    """Every module of the package, by its path in the package, parsed."""
    return [
        (path.relative_to(PACKAGE).as_posix(), ast.parse(path.read_text(), filename=str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    ]


def _status_words(module: str, tree: ast.AST) -> list[str]:
    """The status words of a module outside named constants, ``Literal`` types, outcome labels
    and the listed surface uses; in the worker, ``Ending(...)`` given a status
    that is neither passed through nor a named outcome constant."""
    parents, scopes = _parents(tree), _scopes(tree)
    offenders = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and node.value in STATUS_WORDS
            and not _named_constant(node, parents)
            and not _literal_type(node, parents)
            and not _outcome_label(node, parents)
            and (module, scopes.get(id(node), "<module>"), node.value) not in STATUS_SURFACE
        ):
            where = scopes.get(id(node), "<module>")
            offenders.append(f"{module}:{node.lineno} ({where}): {node.value!r}")
        if (
            module.startswith("worker/")
            and isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
        ):
            status = node.args[:1] if node.func.id == "Ending" else None
            passed_through = isinstance(status[0], ast.Attribute) if status else False
            if (
                status
                and not passed_through
                and not (isinstance(status[0], ast.Name) and status[0].id in OUTCOME_CONSTANTS)
            ):
                offenders.append(f"{module}:{node.lineno}: {node.func.id} status chosen")
    return offenders


def test_the_package_chooses_no_status() -> None:
    """In the whole package a status word appears only as a named constant (what the worker
    reports, what it reads in SQL's answer, a filter's choices), a ``Literal`` type, an outcome
    label, or one of the surface uses listed with their reasons; what the worker reports is one
    of its outcome constants, never an expression that picks one."""
    offenders = [hit for module, tree in _modules() for hit in _status_words(module, tree)]
    assert offenders == [], "status chosen in Python:\n" + "\n".join(offenders)


def test_the_listed_surface_uses_exist() -> None:
    """The reviewed lists name only uses that are there (a stale entry would excuse the next)."""
    seen_words, seen_clocks = set(), set()
    for module, tree in _modules():
        scopes = _scopes(tree)
        for node in ast.walk(tree):
            where = scopes.get(id(node), "<module>")
            if isinstance(node, ast.Constant) and node.value in STATUS_WORDS:
                seen_words.add((module, where, node.value))
            if _is_clock_read(node):
                seen_clocks |= {(module, where), (module, "*")}
    assert set(STATUS_SURFACE) - seen_words == set()
    assert set(CLOCK_SURFACE) - seen_clocks == set()


def test_the_outcomes_a_worker_reports_are_those_pgq_complete_accepts() -> None:
    from pgq_thin.worker import _outcomes

    sql = (REPO / "sql" / "functions" / "complete.sql").read_text()
    accepted = re.search(r"NOT IN \(([^)]*)\)", sql)
    assert accepted is not None
    assert {getattr(_outcomes, name) for name in OUTCOME_CONSTANTS} == set(
        re.findall(r"'(\w+)'", accepted.group(1))
    )


def _attempt_arithmetic(module: str, tree: ast.AST) -> list[str]:
    names = {"attempt", "attempts", "max_attempts"}

    def is_attempt(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id in names) or (
            isinstance(node, ast.Attribute) and node.attr in names
        )

    offenders = []
    for node in ast.walk(tree):
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
            offenders.append(f"{module}:{node.lineno}")
    return offenders


def test_no_arithmetic_or_comparison_on_attempts() -> None:
    """Whether an attempt is the last, or what comes next, is SQL's answer (last_attempt,
    pgq.complete's status): Python never computes with attempt numbers. The demo's handler is
    user code (it fails on purpose a number of times)."""
    offenders = [
        hit
        for module, tree in _modules()
        if module != "cli/_demo_app.py"
        for hit in _attempt_arithmetic(module, tree)
    ]
    assert offenders == [], "arithmetic on attempts in Python: " + ", ".join(offenders)


def _is_clock_read(node: ast.AST) -> bool:
    """``x.now()``, ``x.utcnow()``, ``x.today()`` or ``time.time()``/``time.time_ns()``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    attr, owner = node.func.attr, node.func.value
    return attr in {"now", "utcnow", "today"} or (
        attr in {"time", "time_ns"} and isinstance(owner, ast.Name) and owner.id == "time"
    )


def _clock_reads(module: str, tree: ast.AST) -> list[str]:
    scopes = _scopes(tree)
    offenders: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        where = scopes.get(id(node), "<module>")
        if _is_clock_read(node) and not {(module, where), (module, "*")} & set(CLOCK_SURFACE):
            offenders.append((node.lineno, f"{module}:{node.lineno} ({where})"))
    return [hit for _, hit in sorted(offenders)]


def test_no_queue_time_on_the_client_clock() -> None:
    """Due times, delays and retries are resolved on the server's clock: nothing in the package
    reads the wall clock (``datetime.now()``, ``time.time()``...) for a job. The listed uses are
    no job's time; the cron scheduler's first tick is the one sanctioned computation of queue
    time in Python (docs/architecture.md, "Principles"). Durations use ``time.monotonic()``."""
    offenders = [hit for module, tree in _modules() for hit in _clock_reads(module, tree)]
    assert offenders == [], "the client's clock used for a job: " + ", ".join(offenders)


def test_no_sql_default_repeated_in_python() -> None:
    """The entrypoint policy (heartbeat timeout, attempts, backoff, limits) lives in
    pgq.entrypoints and reaches the worker in the claim answer: no DEFAULT_* constant of it."""
    offenders = []
    for module, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id.lower()
                if "default" in name and any(c in name for c in POLICY_COLUMNS):
                    offenders.append(f"{module}:{node.lineno}: {node.id}")
    assert offenders == [], "SQL policy defaults repeated in Python:\n" + "\n".join(offenders)


# --- the scanners catch what they forbid (each planted in a module they scan) ----------------

PLANTED_STATUS = """
x = 'failed' if job.attempt >= job.max_attempts else 'queued'
e = Ending('canceled', None, 'canceled')
OK = 'successful'
KINDS = ('retry', {'dead': 1})
STATUS = 'failed' if bad else 'queued'
PICKED = {True: 'running', False: 'scheduled'}[late]
LABEL: str = 'interrupted' * 1
ALIAS = Literal['successful', 'failed']
"""


def test_the_status_scanner_finds_chosen_statuses() -> None:
    """Literal constants pass; a conditional, a lookup or an expression assigned to an
    UPPER_CASE name does not (the hole of the old exemption), nor does any status word in a
    module outside the worker, nor one in a listed function under another word."""
    found = _status_words("worker/_planted.py", ast.parse(PLANTED_STATUS))
    by_line = sorted((int(hit.split(":")[1].split()[0]), hit.split(": ", 1)[1]) for hit in found)
    assert by_line == [
        (2, "'failed'"),
        (2, "'queued'"),
        (3, "'canceled'"),  # Ending's status (its third argument is a label)
        (3, "Ending status chosen"),
        (6, "'failed'"),  # the old exemption's hole: a conditional named in UPPER_CASE
        (6, "'queued'"),
        (7, "'running'"),  # a lookup named in UPPER_CASE
        (7, "'scheduled'"),
        (8, "'interrupted'"),  # an expression named in UPPER_CASE
    ]
    elsewhere = _status_words("admin.py", ast.parse("def requeue(j):\n    j.s = 'queued'\n"))
    assert elsewhere == ["admin.py:2 (requeue): 'queued'"]
    listed_scope = ast.parse("def failed_filter(p):\n    return p or 'canceled'\n")
    assert len(_status_words("web/pages.py", listed_scope)) == 1


def test_the_other_scanners_find_decisions() -> None:
    sample = ast.parse(
        "import time\n"
        "class Retry:\n"
        "    def due(self, job):\n"
        "        if job.attempt >= job.max_attempts:\n"
        "            return time.time() + 2 ** job.attempt\n"
        "        return datetime.now(UTC)\n"
        "class Scheduler:\n"
        "    def register(self):\n"
        "        return datetime.now(UTC)\n"
    )
    assert _attempt_arithmetic("queue.py", sample) == ["queue.py:4", "queue.py:5"]
    assert _clock_reads("queue.py", sample) == [
        "queue.py:5 (Retry.due)",
        "queue.py:6 (Retry.due)",
        "queue.py:9 (Scheduler.register)",  # listed for scheduler.py only
    ]
    assert _clock_reads("scheduler.py", sample) == [
        "scheduler.py:5 (Retry.due)",
        "scheduler.py:6 (Retry.due)",
    ]
