"""Every SQL statement of the statement layer fits the installed schema, and the layer is the
manifest's: the hand-tuned statements of ``pgq_thin.calls`` and the generated calls of
``pgq_thin._api`` (with all their arguments, with only those without a default, and with a
timestamp given as an interval before now()) are each prepared (parsed, planned, every
function and column resolved) against a fresh install; the records' fields, the claim's
declared columns and the privilege signatures are checked against ``sql/api.json``."""

from __future__ import annotations

import dataclasses
import inspect
import json
import re
from typing import Any

import psycopg
import pytest
from helpers.server import REPO

from pgq_thin import _api, admin_calls, calls, records

MANIFEST = json.loads((REPO / "sql" / "api.json").read_text())
STATEMENTS = {
    f"{module.__name__}.{name}": value
    for module in (calls, admin_calls)
    for name, value in vars(module).items()
    if name.isupper() and isinstance(value, str) and value.lstrip().upper().startswith("SELECT")
}
STATEMENTS |= {
    f"pgq_thin._api.{name}{form}": sql
    for name, fn in _api.FUNCTIONS.items()
    for form, sql in (("", fn.full), ("(least)", fn.least))
}
STATEMENTS |= {
    f"pgq_thin._api.{name}(ago {arg})": fn.sql(
        [a for a, _ in fn.args[: fn.required]] + [arg], ago=[arg]
    )
    for name, fn in _api.FUNCTIONS.items()
    for arg, kind in fn.args[fn.required :]
    if kind == "timestamp with time zone"
}
# Each record class and the SQL object whose rows it holds (a function's result, a relation).
RECORDS = {
    records.EntrypointStats: "queue_stats",
    records.FailedJob: "failed_jobs",
    records.HistorySummary: "history_summary",
    records.EntrypointConfig: "entrypoint_config",
    records.Schedule: "schedules",
    records.EntrypointMetrics: "metrics",
    records.WorkerStatus: "worker_status",
    records.WorkerRegistration: "register_worker",
    records.Rollup: "rollup_metrics",
    records.JobInfo: "job",
    records.JobResult: "job_results",
    records.JobListing: "list_jobs",
}


def prepare(conn: psycopg.Connection[Any], sql: str) -> None:
    """PREPARE ``sql`` with its ``%s`` placeholders as ``$1, $2, ...``, then forget it."""
    numbered = iter(range(1, sql.count("%s") + 1))
    text = re.sub(r"%s", lambda _: f"${next(numbered)}", sql)
    conn.execute(f"PREPARE pgq_calls_check AS {text}", prepare=False)
    conn.execute("DEALLOCATE pgq_calls_check", prepare=False)  # not transactional


def test_the_modules_hold_statements() -> None:
    names = {name.rpartition(".")[2] for name in STATEMENTS}
    assert {"CLAIM", "COMPLETE", "NEXT_DUE_IN", "WORKERS", "QUEUE_STATS"} <= names
    assert {"metrics", "pause", "job", "find_history", "register_worker"} <= names
    assert set(_api.FUNCTIONS) == set(MANIFEST["functions"])


def test_every_statement_fits_the_installed_schema(pgq_conn: psycopg.Connection[Any]) -> None:
    problems = []
    for name, sql in sorted(STATEMENTS.items()):
        try:
            prepare(pgq_conn, sql)
        except psycopg.Error as err:
            problems.append(f"{name}: {str(err).strip()}\n    {sql}")
    assert not problems, "statements that do not fit the installed schema:\n" + "\n".join(problems)


def test_a_statement_that_does_not_fit_is_caught(pgq_conn: psycopg.Connection[Any]) -> None:
    with pytest.raises(psycopg.errors.UndefinedFunction):
        prepare(pgq_conn, "SELECT * FROM pgq.claim(%s::uuid, %s::text[], %s::int, %s::text)")


def test_records_are_the_result_columns() -> None:
    """A record has a field per result column, same names, same order (a column SQL gains
    fails here until the record has it: the records carry what the catalog cannot say, the
    Python type and whether it may be NULL)."""
    wrong = {
        cls.__name__: (fields, _api.COLUMNS[source])
        for cls, source in RECORDS.items()
        if (fields := tuple(f.name for f in dataclasses.fields(cls))) != _api.COLUMNS[source]
    }
    assert wrong == {}


def test_the_claim_override_sends_the_claimed_job_columns() -> None:
    sent = [c for c in _api.COLUMNS["claim"] if c != "heartbeat_timeout"]  # sent in seconds
    assert list(calls.CLAIM_COLUMNS) == [*sent, "unholdable"]
    assert calls.CLAIM.count(" FROM pgq.claim(") == 1


def test_the_complete_override_sends_columns_of_the_manifest() -> None:
    """The complete override's declared columns are pgq.complete's, in its order (run_at left
    out: the worker needs only retry_in_s), and the statement selects exactly them."""
    assert list(calls.COMPLETE_COLUMNS) == [c for c in _api.COLUMNS["complete"] if c != "run_at"]
    assert calls.COMPLETE.startswith(
        f"SELECT {', '.join(calls.COMPLETE_COLUMNS)} FROM pgq.complete("
    )
    assert list(calls.decisions([(1, "retry", 2, 3, 0.5)])[1]) == ["retry", 2, 3, 0.5]


def test_only_the_hot_path_is_hand_written() -> None:
    """Every pgq function the statement modules name by hand is an override of the hot path,
    or inside a statement that is not one function call (a server-clock delta, a view, one
    call per element of an array)."""
    named = {
        f"{name}: {fn}"
        for name, sql in STATEMENTS.items()
        if not name.startswith("pgq_thin._api.")
        for fn in re.findall(r"(?<!')\bpgq\.(\w+)\(", sql)
    }
    assert named == {
        "pgq_thin.calls.CLAIM: claim",
        "pgq_thin.calls.COMPLETE: complete",
        "pgq_thin.calls.NEXT_DUE_IN: next_run_at",
        "pgq_thin.calls.NEXT_DUE_IN: rate_waits",
        "pgq_thin.calls.NEXT_SCHEDULE_IN: next_schedule_at",
        "pgq_thin.calls.PARENT_RESULTS: parent_results",  # one call per job, in one statement
    }


def test_privileges_name_functions_of_the_manifest() -> None:
    signatures = {f["signature"] for f in MANIFEST["functions"].values()}
    signatures |= {f"pgq.{name}" for name in MANIFEST["relations"]}  # read_failed: a view
    assert set(_api.PRIVILEGE_FUNCTIONS.values()) <= signatures
    assert _api.PRIVILEGE_FUNCTIONS["read_failed"] == "pgq.failed_jobs"
    assert _api.PRIVILEGE_FUNCTIONS["read_jobs"] == "pgq.job(bigint)"


def test_needs_come_from_the_grants() -> None:
    assert _api.NEEDS["requeue"] == ("pgq_admin (or the owner)", "GRANT pgq_admin TO {role}")
    assert _api.NEEDS["job"] == ("pgq_reader (or pgq_admin)", "GRANT pgq_reader TO {role}")
    assert _api.NEEDS["register_worker"] == ("pgq_worker", "GRANT pgq_worker TO {role}")
    assert _api.NEEDS["configure"] == ("pgq_admin (or the owner)", "GRANT pgq_admin TO {role}")


def test_admin_configure_is_the_generated_builder() -> None:
    """An argument ``pgq.configure`` gains is an argument of ``Admin.configure`` with no Python
    edit: the method is the generated builder, its parameters the manifest's, in SQL order."""
    from pgq_thin.admin import Admin, AsyncAdmin

    declared = [a["name"] for a in MANIFEST["functions"]["configure"]["arguments"]]
    for cls in (Admin, AsyncAdmin):
        assert list(inspect.signature(cls.configure).parameters) == declared
