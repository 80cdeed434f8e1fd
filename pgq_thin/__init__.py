"""pgq-thin: a PostgreSQL job queue whose logic lives in the database.

The queue is the SQL in schema ``pgq``; this package is a thin client for it.
Install or upgrade the schema with :func:`pgq_thin.migrate.upgrade` or ``pgq-thin install``.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the real names for type checkers; at run time they load lazily below
    from pgq_thin._version import __version__
    from pgq_thin.admin import Admin, AsyncAdmin
    from pgq_thin.job import CancelJob, FatalError, Job, RetryAfter, Snooze
    from pgq_thin.queue import AsyncQueue, Queue
    from pgq_thin.worker import ThinWorker

__all__ = [
    "Admin",
    "AsyncAdmin",
    "AsyncQueue",
    "CancelJob",
    "FatalError",
    "Job",
    "Queue",
    "RetryAfter",
    "Snooze",
    "ThinWorker",
    "__version__",
]

# The client's public names, imported on first use (keeps `import pgq_thin` and the CLI light).
_LAZY = {
    "Admin": "pgq_thin.admin",
    "AsyncAdmin": "pgq_thin.admin",
    "AsyncQueue": "pgq_thin.queue",
    "Queue": "pgq_thin.queue",
    "CancelJob": "pgq_thin.job",
    "FatalError": "pgq_thin.job",
    "Job": "pgq_thin.job",
    "RetryAfter": "pgq_thin.job",
    "Snooze": "pgq_thin.job",
    "ThinWorker": "pgq_thin.worker",
    # reading the installed distribution's metadata costs ~30 ms: only when asked
    "__version__": "pgq_thin._version",
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'pgq_thin' has no attribute {name!r}")
