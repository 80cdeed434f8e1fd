"""What the connected role may do (:data:`PRIVILEGES`: the catalog's answer, so a dashboard
hides what the database would refuse), and the dashboard's other calls (kept importable here;
they live in :mod:`pgq_thin.admin_calls`). The signatures come from the manifest
(``pgq_thin._api.SIGNATURES``), never typed again here.
"""

from __future__ import annotations

import dataclasses

from pgq_thin import _api
from pgq_thin.admin_calls import (
    Call,
    delete_jobs,
    entrypoint_config,
    find_by_dedupe_key,
    fire_schedule_now,
    optional,
)
from pgq_thin.records import Privileges

__all__ = [
    "PRIVILEGE_FUNCTIONS",
    "PRIVILEGE_VIEWS",
    "delete_jobs",
    "entrypoint_config",
    "find_by_dedupe_key",
    "fire_schedule_now",
    "privileges",
]

#: The fields of :class:`~pgq_thin.records.Privileges` that stand for reading a view.
PRIVILEGE_VIEWS = {"read_failed": "pgq.failed_jobs"}
#: Each other field and the function it stands for (the field's name, but ``read_jobs``:
#: ``pgq.job``).
PRIVILEGE_FUNCTIONS = {
    f.name: _api.SIGNATURES["job" if f.name == "read_jobs" else f.name]
    for f in dataclasses.fields(Privileges)
    if f.name not in PRIVILEGE_VIEWS
}
# One row of booleans; a function or view missing from the install reads as not allowed.
PRIVILEGES = "SELECT " + ", ".join(
    [
        f"coalesce(has_function_privilege(to_regprocedure('{fn}'), 'EXECUTE'), false) AS {name}"
        for name, fn in PRIVILEGE_FUNCTIONS.items()
    ]
    + [
        f"coalesce(has_table_privilege(to_regclass('{view}'), 'SELECT'), false) AS {name}"
        for name, view in PRIVILEGE_VIEWS.items()
    ]
)


def privileges() -> Call[Privileges]:
    return Call(PRIVILEGES, (), lambda rows: optional(Privileges)(rows) or Privileges())
