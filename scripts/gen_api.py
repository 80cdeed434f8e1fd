"""Writes pgq_thin/_api.py, the Python statement layer, from sql/api.json (the SQL API manifest).

``make golden`` writes sql/api.json from a fresh install and then this module (through
``tests/py/test_golden.py``); run it alone with ``python scripts/gen_api.py`` after editing
the manifest by hand (never needed). ``--check`` exits 1 when pgq_thin/_api.py is stale.

Per public function: its argument list (name and SQL type, which have a default), its result
columns, who may call it (the roles granted EXECUTE, named in a PrivilegeMissing error) and its
identity signature (for ``has_function_privilege``); and one typed builder of a
:class:`pgq_thin._statements.Call` that passes the arguments given and leaves the others to
their SQL defaults (those without a default may be passed by position, in the SQL order; the
others only by name). Per readable relation: its columns. Per record of :data:`RECORDS`: a
frozen dataclass of the result columns.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
MANIFEST = REPO / "sql" / "api.json"
TARGET = REPO / "pgq_thin" / "_api.py"
# The roles in the order a missing grant is fixed (the narrowest first), as pgq_thin.migrate.ROLES.
ROLES = ("pgq_producer", "pgq_worker", "pgq_reader", "pgq_admin")
SCALARS = {
    "text": "str",
    "integer": "int",
    "bigint": "int",
    "smallint": "int",
    "boolean": "bool",
    "double precision": "float",
    "real": "float",
    "numeric": "Decimal",
    "uuid": "UUID",
    "timestamp with time zone": "datetime",
    "interval": "timedelta",
    "jsonb": "Any",
}


#: The records: each class, the SQL object whose rows it holds (a function's result or a
#: readable relation), and its columns that are never NULL, the one thing the catalog cannot
#: say (any other column is ``X | None``, so a column SQL gains is optional until listed here).
#: A function answers in the record of its name, or of its row type; its other rows are dicts.
RECORDS = {
    "EntrypointStats": ("queue_stats", "entrypoint queued due running stale max_attempts"
                        " heartbeat_timeout paused"),
    "FailedJob": ("failed_jobs", "id entrypoint attempt priority enqueued_at finished_at errors"),
    "HistorySummary": ("history_summary", "entrypoint status jobs max_attempt avg_latency_s"),
    "EntrypointConfig": ("entrypoint_config", "entrypoint max_attempts backoff_base backoff_max"
                         " heartbeat_timeout updated_at"),
    "Schedule": ("schedules", "name entrypoint cron timezone priority catch_up misfire_grace"
                 " fire_timeout next_run_at state created_at updated_at"),
    "EntrypointMetrics": ("metrics", "entrypoint paused queued due delayed running stale lag_s"
                          " successful_1m failed_1m canceled_1m successful_5m failed_5m"
                          " canceled_5m successful_15m failed_15m canceled_15m throughput_1m"
                          " throughput_5m throughput_15m successful_total failed_total"
                          " canceled_total rollup_caught_up served"),
    "WorkerStatus": ("worker_status", "worker_id state running stale job_ids"),
    "WorkerRegistration": ("register_worker", "started_at last_seen_at gone_after"
                           " heartbeat_interval"),
    "Rollup": ("rollup_metrics", "rolled caught_up busy"),
    "MetricsPoint": ("metrics_series", "minute successful failed canceled"),
    "JobInfo": ("job", "id entrypoint status priority attempt max_attempts enqueued_at"),
    "JobResult": ("job_results", "id status finished"),
    "JobListing": ("list_jobs", "id entrypoint status priority attempt enqueued_at cursor"),
    "Tokens": ("take_tokens", "granted remaining"),
}  # fmt: skip
#: Records with derived properties: the mixin of pgq_thin._record_mixins each inherits.
MIXINS = {"FailedJob": "FailedJobMixin", "EntrypointConfig": "EntrypointConfigMixin"}
#: Functions whose set holds one row ("one": always; "optional": one or none), and scalar
#: functions that may answer NULL: what the catalog cannot say about an answer.
ONE_ROW = {
    "register_worker": "one", "rollup_metrics": "one", "maintain": "one", "job": "optional",
    "take_tokens": "one",
}  # fmt: skip
NULLABLE = {"next_run_at", "next_schedule_at"}
# What the generated module takes from pgq_thin._statements (the shapes of an answer).
SHAPES = ("Call", "Fn", "Row", "column", "first", "optional", "record", "records", "rows", "value")
#: What a screen asks the catalog it may call (``has_function_privilege``): each field of the
#: generated ``Privileges`` and the function it stands for (``read_jobs``: reading jobs with
#: their payloads); a screen hides what is False, the database refuses it anyway.
#: A ``read_`` field stands for reading (``read_failed``: SELECT on view ``pgq.failed_jobs``).
PRIVILEGES = {"read_jobs": "job", "read_failed": "failed_jobs"} | {f: f for f in (
    "pause", "resume", "cancel", "requeue", "requeue_history", "delete_history", "delete_jobs",
    "schedule", "unschedule", "fire_schedule_now", "configure",
)}  # fmt: skip
#: The shape of the JSON columns a record types more narrowly than ``Any``, by column name.
JSON_SHAPES = {"headers": "dict[str, Any]", "errors": "list[Any]"}


def record_type(column: dict[str, str], not_null: set[str]) -> str:
    """The type of a record's field for a result column (``Any`` may be None already)."""
    sql = column["type"]
    if sql.endswith("[]"):
        t = f"list[{SCALARS.get(sql[:-2], 'Any')}]"
    elif sql == "jsonb":
        t = JSON_SHAPES.get(column["name"], "Any")
    else:
        t = SCALARS.get(sql, "Any")
    return t if t == "Any" or column["name"] in not_null else f"{t} | None"


def render_records(manifest: dict[str, Any]) -> list[str]:
    out = []
    for cls, (source, never_null) in RECORDS.items():
        fn = manifest["functions"].get(source)
        obj = fn or manifest["relations"][source]
        columns = obj["columns"]
        names = {c["name"] for c in columns}
        if unknown := set(never_null.split()) - names:
            raise ValueError(f"RECORDS[{cls!r}] names no column {sorted(unknown)} of {source}")
        what = f"``pgq.{source}()``" if fn else f"{obj['kind']} ``pgq.{source}``"
        base = f"(_record_mixins.{MIXINS[cls]})" if cls in MIXINS else ""
        out += ["", "", "@dataclass(frozen=True)", f"class {cls}{base}:"]
        doc = _wrap_comment(f"QQQOne row of {what}: {obj['comment'] or ''}", "    ")
        out += [doc[0].replace("QQQ", '"""'), *doc[1:]]
        out[-1] += '"""'
        out.append("")
        out += [f"    {c['name']}: {record_type(c, set(never_null.split()))}" for c in columns]
    return out


def record_of(name: str, fn: dict[str, Any], manifest: dict[str, Any]) -> str | None:
    """The record a function answers in: the one of its name, else one of its row type."""
    for cls, (source, _) in RECORDS.items():
        if source == name:
            return cls
    for cls, (source, _) in RECORDS.items():
        other = manifest["functions"].get(source) or {}
        if fn.get("row_type") and fn["row_type"] in (f"pgq.{source}", other.get("row_type")):
            return cls
    return None


def answer(name: str, fn: dict[str, Any], manifest: dict[str, Any]) -> tuple[str, str]:
    """The Python type of a function's answer and the shape that makes it from the rows."""
    cls = record_of(name, fn, manifest)
    one = ONE_ROW.get(name, "" if fn["returns_set"] else "one")
    if fn["scalar"]:
        t = record_type(fn["columns"][0], set() if name in NULLABLE else {fn["columns"][0]["name"]})
        return t, "value"
    if cls is None and len(fn["columns"]) == 1:
        return f"list[{record_type(fn['columns'][0], {fn['columns'][0]['name']})}]", "column"
    if cls is None:
        return ("Row", "first") if one else ("list[Row]", "rows")
    if one == "optional":
        return f"{cls} | None", f"optional({cls})"
    return (cls, f"record({cls})") if one else (f"list[{cls}]", f"records({cls})")


def render_privileges(manifest: dict[str, Any]) -> list[str]:
    """``privileges()``: one row of booleans, a function missing from the install as False."""
    fns, views = manifest["functions"], manifest["relations"]
    signatures = {n: fns[f]["signature"] if f in fns else f"pgq.{f}" for n, f in PRIVILEGES.items()}
    checks = ", ".join(
        f"coalesce(has_table_privilege(to_regclass('{sig}'), 'SELECT'), false) AS {n}"
        if PRIVILEGES[n] in views
        else f"coalesce(has_function_privilege(to_regprocedure('{sig}'), 'EXECUTE'), false) AS {n}"
        for n, sig in signatures.items()
    )
    out = ["", "", "#: Each field of :class:`Privileges` and the function (or view) it stands for."]
    out += ["PRIVILEGE_FUNCTIONS: dict[str, str] = {"]
    out += [f'    "{n}": "{sig}",' for n, sig in signatures.items()]
    out += ["}", f'PRIVILEGES = "SELECT {checks}"', "", "", "@dataclass(frozen=True)"]
    out += ["class Privileges(_record_mixins.PrivilegesMixin):"]
    out += ['    """What the connected role may call (gen_api.PRIVILEGES); False: hidden."""']
    out += ["", *(f"    {n}: bool = False" for n in signatures), "", ""]
    out += ["def privileges() -> Call[Privileges]:"]
    out += ["    return Call(PRIVILEGES, (), record(Privileges))"]
    return out


def python_type(sql_type: str) -> str:
    """The Python type a caller passes for an argument of ``sql_type``."""
    if sql_type.endswith("[]"):  # an element may be NULL (a timestamp is one, never "ago")
        return f"Sequence[{SCALARS.get(sql_type[:-2], 'Any')} | None]"
    if sql_type == "timestamp with time zone":
        return "datetime | timedelta"  # a timedelta: that long before the server's now()
    return SCALARS.get(sql_type, "Any")


def needs(roles: list[str], order: tuple[str, ...] = ROLES) -> tuple[str, str]:
    """What a PrivilegeMissing error says the role lacks, and the fix it names (the first of
    ``order`` granted: for a view, the reader role)."""
    granted = [r for r in order if r in roles]
    if not granted:
        return "the rights of the schema owner", "OWNER_ONLY"
    first, others = granted[0], granted[1:]
    if first == "pgq_admin":
        others = ["the owner"]
    text = first + (f" (or {' or '.join(others)})" if others else "")
    return text, f"GRANT {first} TO {{role}}"


def _wrap_comment(text: str | None, indent: str) -> list[str]:
    words, lines = (text or "").replace('"""', "'''").replace("\\", "\\\\").split(), [""]
    for word in words:
        if lines[-1] and len(indent) + len(lines[-1]) + 1 + len(word) > 92:
            lines.append("")
        lines[-1] = f"{lines[-1]} {word}".strip()
    return [f"{indent}{line}" for line in lines if line]


def render(manifest: dict[str, Any]) -> str:
    fns: dict[str, Any] = manifest["functions"]
    out = [
        '"""The public SQL API of schema pgq as Python. GENERATED from sql/api.json by',
        "scripts/gen_api.py (``make golden``): do not edit.",
        "",
        "One typed builder per ``pgq`` function returns a :class:`Call` of its answer, typed and",
        "shaped from the result columns (run it with ``pgq_thin._sql_runner.run`` or ``arun``); an",
        "argument left out (or None) takes its SQL default, and only those without a default may",
        "be given by position. :data:`FUNCTIONS`,",
        ":data:`COLUMNS`, :data:`NEEDS` and :data:`SIGNATURES` are the manifest's tables; the",
        'records at the end are its result rows (``pgq_thin.records`` re-exports them)."""',
        "",
        "# ruff: noqa: E501, F401",
        "from __future__ import annotations",
        "",
        "from collections.abc import Sequence",
        "from dataclasses import dataclass",
        "from datetime import datetime, timedelta",
        "from decimal import Decimal",
        "from typing import Any",
        "from uuid import UUID",
        "",
        "from pgq_thin import _record_mixins",
        "from pgq_thin._statements import (",
        *(f"    {n}," for n in SHAPES),
        ")",
        "",
        f'REVISION = "{manifest.get("revision", "")}"',
        "",
        "#: Each function: its arguments (name, SQL type), how many have no default, a scalar.",
        "FUNCTIONS: dict[str, Fn] = {",
    ]
    for name, f in fns.items():
        args = ", ".join(f'("{a["name"]}", "{a["type"]}")' for a in f["arguments"])
        required = sum(1 for a in f["arguments"] if a["default"] is None)
        comma = "," if len(f["arguments"]) == 1 else ""
        out.append(f'    "{name}": Fn("pgq.{name}", ({args}{comma}), {required}, {f["scalar"]}),')
    out += [
        "}",
        "",
        "#: The result columns of each function, and the columns of each readable relation.",
    ]
    out.append("COLUMNS: dict[str, tuple[str, ...]] = {")
    items = [(n, f["columns"]) for n, f in fns.items()]
    items += [(n, r["columns"]) for n, r in manifest["relations"].items()]
    for name, columns in items:
        cols = ", ".join(f'"{c["name"]}"' for c in columns)
        comma = "," if len(columns) == 1 else ""
        out.append(f'    "{name}": ({cols}{comma}),')
    out += [
        "}",
        "",
        "#: Identity signatures, as has_function_privilege takes them.",
        "SIGNATURES: dict[str, str] = {",
    ]
    out += [f'    "{n}": "{f["signature"]}",' for n, f in fns.items()]
    out += [
        "}",
        "",
        "#: What a role must hold to call each function (to read each relation), and the fix a",
        "#: PrivilegeMissing names.",
    ]
    out += [
        'OWNER_ONLY = "connect as the owner of schema pgq, or as an operator role with the grants"'
        ' " in docs/operations.md"'
    ]
    out.append("NEEDS: dict[str, tuple[str, str]] = {")
    granted: list[tuple[str, list[str], tuple[str, ...]]]
    granted = [(n, f["execute"], ROLES) for n, f in fns.items()]
    readers = ("pgq_reader", *(r for r in ROLES if r != "pgq_reader"))
    granted += [(n, r["select"], readers) for n, r in manifest["relations"].items()]
    for n, roles, order in granted:
        text, fix = needs(roles, order)
        out.append(f'    "{n}": ("{text}", {fix if fix == "OWNER_ONLY" else repr(fix)}),')
    out += ["}"]
    for name, f in fns.items():
        params = []
        for a in f["arguments"]:
            t = python_type(a["type"])
            params.append(
                f"{a['name']}: {t}" if a["default"] is None else f"{a['name']}: {t} | None = None"
            )
        given = ", ".join(f"{a['name']}={a['name']}" for a in f["arguments"])
        required = sum(1 for a in f["arguments"] if a["default"] is None)
        if required < len(params):  # those with a SQL default only by name
            params.insert(required, "*")
        kind, shape = answer(name, f, manifest)
        out += ["", "", f"def {name}({', '.join(params)}) -> Call[{kind}]:"]
        out += ['    """' + f"``{f['signature']}``, ``RETURNS {f['returns']}``."]
        out += [*_wrap_comment(f["comment"], "    "), '    """']
        out.append(f'    return FUNCTIONS["{name}"].call({shape}, {given})'.replace(", )", ")"))
    out += render_privileges(manifest)
    out += ["", "", "# --- records: a frozen dataclass per kind of row (gen_api.RECORDS)"]
    out += render_records(manifest)
    return "\n".join(out) + "\n"


def main(argv: list[str]) -> int:
    text = render(json.loads(MANIFEST.read_text()))
    if "--check" in argv:
        if TARGET.read_text() != text:
            print(f"{TARGET.relative_to(REPO)} is stale: run `make golden`", file=sys.stderr)
            return 1
        return 0
    TARGET.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
