"""The worker in the registry (``pgq.workers``): it registers before its first claim (and
again on a new connection), stays fresh through the heartbeats it sends anyway (with empty
arrays while it holds no job, see ``_heartbeat``) and unregisters at a clean stop. What it
announces: its entrypoints, host, pid, version and settings; the database decides when it
counts as gone (``pgq.worker_status``)."""

from __future__ import annotations

import os
import socket

from pgq_thin import _api, calls
from pgq_thin._sql_runner import arun
from pgq_thin._statements import Call
from pgq_thin._version import __version__
from pgq_thin.records import WorkerRegistration
from pgq_thin.worker._settings import WorkerSettings


def registration(settings: WorkerSettings, entrypoints: list[str]) -> Call[WorkerRegistration]:
    """The ``pgq.register_worker`` call of this worker (the timeout: the SQL default)."""
    return _api.register_worker(
        settings.worker_id,
        entrypoints=sorted(entrypoints),
        host=socket.gethostname(),
        pid=os.getpid(),
        version=__version__,
        metadata={
            "client": "pgq-thin",
            "concurrency": settings.concurrency,
            "batch_size": settings.batch_size,
            "run_schedules": settings.run_schedules,
        },
    )


async def register(
    conn: calls.AConn, settings: WorkerSettings, entrypoints: list[str]
) -> WorkerRegistration:
    return await arun(conn, registration(settings, entrypoints))


async def unregister(conn: calls.AConn, settings: WorkerSettings) -> bool:
    return await arun(conn, _api.unregister_worker(settings.worker_id))
