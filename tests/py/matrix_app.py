"""The Python worker of tests/py/test_outcome_matrix.py, run as ``pgq-thin run
matrix_app:worker``: the handlers of examples/node/worker.js and examples/psql/worker.sh that
the matrix uses (``fail``, ``flaky``, ``sleep``, ``nap``, ``doom``), with the same
behaviour. Each prints the
examples' ``started job=ID ...`` line when it begins."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from pgq_thin.job import FatalError, Job, Snooze
from pgq_thin.worker import ThinWorker

worker = ThinWorker(poll_interval=0.2)


def started(job: Job[Any]) -> None:
    print(f"started job={job.id} entrypoint={job.entrypoint} attempt={job.attempt}", flush=True)


@worker.entrypoint("fail")
async def fail(job: Job[Any]) -> None:
    started(job)
    raise RuntimeError(f"demo failure: {json.dumps(job.payload)}")


@worker.entrypoint("flaky")
async def flaky(job: Job[Any]) -> str:
    """``{"fails": N}``: fails its first N attempts (user code: it may count attempts)."""
    started(job)
    if job.attempt <= (job.payload or {}).get("fails", 1):
        raise RuntimeError(f"flaky failure: attempt {job.attempt}")
    return "recovered"


@worker.entrypoint("sleep")
async def sleep(job: Job[Any]) -> str:
    """``{"ms": N}``; a cancel or the end of the grace period cancels the task."""
    started(job)
    await asyncio.sleep((job.payload or {}).get("ms", 1000) / 1000)
    return "slept"


@worker.entrypoint("nap")
async def nap(job: Job[Any]) -> None:
    """Always snoozes 0.1 s (the examples' ``nap``): past max_snoozes SQL counts it."""
    started(job)
    raise Snooze(0.1)


@worker.entrypoint("doom")
async def doom(job: Job[Any]) -> None:
    """Can never succeed (the examples' ``doom``): dead at once."""
    started(job)
    raise FatalError(f"doomed: {json.dumps(job.payload)}")
