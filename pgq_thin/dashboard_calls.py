"""Statements of the admin operations added for the web dashboard (and any other screen).

Built like :mod:`pgq_thin.admin_calls` (which runs them): the policy's read side
(``pgq.entrypoint_config``), the search by dedupe key (``pgq.find_by_dedupe_key``), deleting
finished jobs by id (``pgq.delete_jobs``), firing a schedule now (``pgq.fire_schedule_now``)
and what the connected role may do (:data:`PRIVILEGES`: the catalog's answer, so a
dashboard hides what the database would refuse). Kept apart to keep each module small;
``tests/py/test_layering.py`` allows SQL text here, ``tests/py/test_calls.py`` prepares it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pgq_thin.admin_calls import Call, Fn, ints, optional, records, value
from pgq_thin.records import EntrypointConfig, JobListing, Privileges

__all__ = [
    "PRIVILEGE_FUNCTIONS",
    "delete_jobs",
    "entrypoint_config",
    "find_by_dedupe_key",
    "fire_schedule_now",
    "privileges",
]

ENTRYPOINT_CONFIG = "SELECT * FROM pgq.entrypoint_config(%s::text[])"
FIND_BY_DEDUPE_KEY = Fn(
    "pgq.find_by_dedupe_key", (("dedupe_key", "text"), ("max_rows", "int")), required=1
)
DELETE_JOBS = "SELECT * FROM pgq.delete_jobs(%s::bigint[])"
FIRE_SCHEDULE_NOW = "SELECT pgq.fire_schedule_now(%s::text)"

#: Each field of :class:`~pgq_thin.records.Privileges` and the function it stands for.
PRIVILEGE_FUNCTIONS = {
    "read_jobs": "pgq.job(bigint)",
    "pause": "pgq.pause(text[],timestamptz)",
    "resume": "pgq.resume(text[])",
    "cancel": "pgq.cancel(bigint[],timestamptz)",
    "requeue": "pgq.requeue(bigint[],timestamptz)",
    "requeue_history": (
        "pgq.requeue_history(text,text[],timestamptz,timestamptz,text,int,timestamptz)"
    ),
    "delete_history": "pgq.delete_history(text,text[],timestamptz,timestamptz,text,int)",
    "delete_jobs": "pgq.delete_jobs(bigint[])",
    "schedule": (
        "pgq.schedule(text,text,text,timestamptz,text,jsonb,int,jsonb,text,interval,interval)"
    ),
    "unschedule": "pgq.unschedule(text)",
    "fire_schedule_now": "pgq.fire_schedule_now(text,timestamptz)",
}
# One row of booleans; a function missing from the install reads as not allowed.
PRIVILEGES = "SELECT " + ", ".join(
    f"coalesce(has_function_privilege(to_regprocedure('{fn}'), 'EXECUTE'), false) AS {name}"
    for name, fn in PRIVILEGE_FUNCTIONS.items()
)


def entrypoint_config(entrypoints: str | Sequence[str] | None) -> Call[list[EntrypointConfig]]:
    names = [entrypoints] if isinstance(entrypoints, str) else entrypoints
    return Call(
        ENTRYPOINT_CONFIG, (None if names is None else list(names),), records(EntrypointConfig)
    )


def find_by_dedupe_key(dedupe_key: str, max_rows: int | None) -> Call[list[JobListing]]:
    return FIND_BY_DEDUPE_KEY.call(records(JobListing), dedupe_key=dedupe_key, max_rows=max_rows)


def delete_jobs(ids: Sequence[int]) -> Call[list[int]]:
    return Call(DELETE_JOBS, (list(ids),), ints)


def fire_schedule_now(name: str) -> Call[int]:
    return Call(FIRE_SCHEDULE_NOW, (name,), lambda rows: int(value(rows)))


def privileges() -> Call[Privileges]:
    return Call(PRIVILEGES, (), lambda rows: optional(Privileges)(rows) or Privileges())
