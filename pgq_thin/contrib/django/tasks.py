"""A backend for Django's task framework that enqueues through ``pgq.enqueue``.

::

    TASKS = {"default": {"BACKEND": "pgq_thin.contrib.django.tasks.PgqBackend"}}

    @task(priority=10)
    def send_welcome(user_id: int) -> str: ...

    with transaction.atomic():
        user = User.objects.create(...)
        send_welcome.enqueue(user.id)   # commits, or rolls back, with the user

A task is one pgq entrypoint, named by the task's module path
(``myapp.tasks.send_welcome``); its arguments are the payload (``{"args": [...], "kwargs":
{...}}``, the JSON Django's framework already requires), its priority the job's priority,
``run_after`` the job's due time, and the task's queue name and backend go in the job's headers.
Retries, backoff and the rest of the policy are pgq's, per entrypoint (``pgq-thin configure``).
The result (``get_result``) is read from ``pgq.job``: status, return value, every failed
attempt's error.

``OPTIONS``: ``DATABASE`` (the Django database alias, default ``"default"``), ``TASK_MODULES``
(modules the worker imports to find tasks beyond each installed app's ``tasks`` module).
"""

from __future__ import annotations

import builtins
from typing import Any

from django.db import connections

from pgq_thin.admin import Admin
from pgq_thin.contrib.django._compat import (
    BaseTaskBackend,
    InvalidTask,
    Task,
    TaskError,
    TaskResult,
    TaskResultDoesNotExist,
    TaskResultStatus,
)
from pgq_thin.queue import Queue
from pgq_thin.records import JobInfo

__all__ = ["PgqBackend", "entrypoint_of"]

#: How pgq's job statuses read in Django's vocabulary (a translation: pgq decided the status).
STATUS = {
    "queued": TaskResultStatus.READY,
    "scheduled": TaskResultStatus.READY,
    "running": TaskResultStatus.RUNNING,
    "successful": TaskResultStatus.SUCCESSFUL,
    "failed": TaskResultStatus.FAILED,
    "canceled": TaskResultStatus.FAILED,
}


def entrypoint_of(task: Any) -> str:
    """The pgq entrypoint of a Django task: its module path."""
    return str(task.module_path)


class PgqBackend(BaseTaskBackend):
    """Django tasks as pgq jobs, enqueued on Django's own connection and transaction."""

    supports_defer = True
    supports_async_task = True
    supports_get_result = True
    supports_priority = True

    def __init__(self, alias: str, params: dict[str, Any]) -> None:
        super().__init__(alias, params)
        self.database = str(self.options.get("DATABASE", "default"))

    def validate_task(self, task: Any) -> None:
        super().validate_task(task)
        if task.takes_context:
            raise InvalidTask(
                f"task {entrypoint_of(task)} takes a context: the pgq backend does not pass "
                "one yet (the job's attempt is in pgq.job)"
            )

    def _connection(self) -> Any:
        return connections[self.database]

    def enqueue(self, task: Any, args: Any, kwargs: Any) -> Any:
        self.validate_task(task)
        connection = self._connection()
        job_id = Queue(connection).enqueue(
            entrypoint_of(task),
            {"args": list(args), "kwargs": dict(kwargs)},
            priority=int(task.priority),
            run_at=task.run_after,
            headers={"django_queue": task.queue_name, "django_backend": self.alias},
        )
        job = Admin(connection).job(job_id)  # the server's times, in the same transaction
        assert job is not None
        return self._result(task, job)

    def get_result(self, result_id: str) -> Any:
        try:
            job_id = int(result_id)
        except ValueError:
            raise TaskResultDoesNotExist(result_id) from None
        job = Admin(self._connection()).job(job_id)
        if job is None:
            raise TaskResultDoesNotExist(result_id)
        from django.utils.module_loading import import_string

        found = import_string(job.entrypoint)
        task = found if isinstance(found, Task) else None
        if task is None:
            raise TaskResultDoesNotExist(result_id)
        return self._result(task, job)

    def _result(self, task: Any, job: JobInfo) -> Any:
        payload = job.payload if isinstance(job.payload, dict) else {}
        errors = [
            TaskError(
                exception_class_path=_exception_path(e),
                traceback=str((e.get("details") or e).get("traceback", "")),
            )
            for e in job.errors or []
            if isinstance(e, dict)
        ]
        result = TaskResult(
            task=task,
            id=str(job.id),
            status=STATUS[job.status],
            enqueued_at=job.enqueued_at,
            started_at=job.started_at,
            finished_at=job.finished_at,
            last_attempted_at=job.started_at,
            args=list(payload.get("args", [])),
            kwargs=dict(payload.get("kwargs", {})),
            backend=self.alias,
            errors=errors,
            worker_ids=[str(job.worker_id)] if job.worker_id else [],
        )
        object.__setattr__(result, "_return_value", job.result)
        return result


def _exception_path(error: dict[str, Any]) -> str:
    """The failed attempt's exception type as recorded (a builtin gets its module)."""
    details = error.get("details") or error
    name = str(details.get("error") or "Exception")
    return f"builtins.{name}" if "." not in name and hasattr(builtins, name) else name
