"""Django's task framework: ``django.tasks`` (Django 6) or the ``django-tasks`` package (the
same API before Django 6)."""

from __future__ import annotations

try:
    from django.tasks import TaskResult, TaskResultStatus
    from django.tasks.backends.base import BaseTaskBackend
    from django.tasks.base import Task, TaskError
    from django.tasks.exceptions import InvalidTask, TaskResultDoesNotExist
except ImportError:  # Django before 6
    from django_tasks import TaskResult, TaskResultStatus  # type: ignore[no-redef,unused-ignore]
    from django_tasks.backends.base import BaseTaskBackend  # type: ignore[no-redef,unused-ignore]
    from django_tasks.base import Task, TaskError  # type: ignore[no-redef,unused-ignore]
    from django_tasks.exceptions import (  # type: ignore[no-redef,unused-ignore]
        InvalidTaskError as InvalidTask,
    )
    from django_tasks.exceptions import (  # type: ignore[no-redef,unused-ignore]
        TaskResultDoesNotExist,
    )

__all__ = [
    "BaseTaskBackend",
    "InvalidTask",
    "Task",
    "TaskError",
    "TaskResult",
    "TaskResultDoesNotExist",
    "TaskResultStatus",
]
