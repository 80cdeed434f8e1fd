"""A :class:`~pgq_thin.ThinWorker` that runs the project's Django tasks.

Tasks are found in every installed app's ``tasks`` module (and the backend's
``OPTIONS["TASK_MODULES"]``); each task of a :class:`~pgq_thin.contrib.django.tasks.PgqBackend`
becomes the handler of its entrypoint (the task's module path). The database is Django's
(``DATABASES[OPTIONS["DATABASE"]]``, the test database under ``manage.py test``), unless a DSN
is given (``PGQ_DSN``, ``--dsn``). Each sync task closes Django's stale connections before and
after it runs, as a request does.
"""

from __future__ import annotations

import importlib
from typing import Any

from django.apps import apps
from django.db import close_old_connections, connections
from psycopg.conninfo import make_conninfo

from pgq_thin import Job, ThinWorker
from pgq_thin.contrib.django._compat import Task
from pgq_thin.contrib.django.tasks import PgqBackend, entrypoint_of

__all__ = ["build_worker", "database_dsn", "discover_tasks"]


def _backends() -> list[PgqBackend]:
    try:
        from django.tasks import task_backends
    except ImportError:
        from django_tasks import task_backends  # type: ignore[no-redef,unused-ignore]
    found = []
    for alias in task_backends.settings:
        backend = task_backends[alias]
        if isinstance(backend, PgqBackend):
            found.append(backend)
    return found


def discover_tasks() -> list[Any]:
    """Every Django task of a pgq backend in the installed apps' ``tasks`` modules and the
    backends' ``TASK_MODULES``, by entrypoint."""
    modules = [f"{app.name}.tasks" for app in apps.get_app_configs()]
    for backend in _backends():
        modules += list(backend.options.get("TASK_MODULES", []))
    found: dict[str, Any] = {}
    for name in modules:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as err:
            if err.name == name:
                continue  # an app without a tasks module
            raise
        for value in vars(module).values():
            if isinstance(value, Task) and isinstance(value.get_backend(), PgqBackend):
                found[entrypoint_of(value)] = value
    return [found[name] for name in sorted(found)]


def database_dsn(alias: str = "default") -> str:
    """The libpq DSN of a Django database (as Django connects to it now: under
    ``manage.py test``, the test database)."""
    s = connections[alias].settings_dict
    params = {
        "dbname": s.get("NAME"),
        "user": s.get("USER"),
        "password": s.get("PASSWORD"),
        "host": s.get("HOST"),
        "port": s.get("PORT"),
    }
    for key, value in (s.get("OPTIONS") or {}).items():
        if isinstance(value, str | int) and key not in ("pool", "server_side_binding"):
            params[key] = value
    return make_conninfo("", **{k: v for k, v in params.items() if v not in (None, "")})


def _handler(task: Any) -> Any:
    if task.func is not None and _is_async(task.func):

        async def run_async(job: Job[Any]) -> Any:
            payload = job.payload or {}
            return await task.acall(*payload.get("args", []), **payload.get("kwargs", {}))

        return run_async

    def run(job: Job[Any]) -> Any:
        payload = job.payload or {}
        close_old_connections()
        try:
            return task.call(*payload.get("args", []), **payload.get("kwargs", {}))
        finally:
            close_old_connections()

    return run


def _is_async(func: Any) -> bool:
    import inspect

    return inspect.iscoroutinefunction(func)


def build_worker(dsn: str | None = None, **settings: Any) -> ThinWorker:
    """A worker for every discovered task (settings as :class:`~pgq_thin.ThinWorker`'s)."""
    backends = _backends()
    alias = str(backends[0].database) if backends else "default"
    worker = ThinWorker(dsn or database_dsn(alias), **settings)
    for task in discover_tasks():
        worker.entrypoint(entrypoint_of(task))(_handler(task))
    return worker
