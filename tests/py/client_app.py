"""A worker module for tests that run ``pgq-thin run client_app:...`` in subprocesses."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from pgq_thin.job import Job
from pgq_thin.worker import ThinWorker

worker = ThinWorker(poll_interval=float(os.environ.get("CLIENT_APP_POLL", "1")))


@worker.entrypoint("proc.work")
async def work(job: Job[Any]) -> None:
    await asyncio.sleep(float((job.payload or {}).get("sleep", 0)))


@worker.entrypoint("proc.sync_sleep")
def sync_sleep(job: Job[Any]) -> None:
    # Sleeps in small steps so a cancel or shutdown past the grace period is noticed.
    job.cancelled.wait(float((job.payload or {}).get("sleep", 0)))


def make_worker() -> ThinWorker:
    """A factory, as ``pgq-thin run client_app:make_worker``."""
    return worker


@asynccontextmanager
async def lifespan() -> AsyncIterator[ThinWorker]:
    """An async context manager factory, as ``pgq-thin run client_app:lifespan``."""
    yield worker


@worker.entrypoint("proc.slow_first")
async def slow_first(job: Job[Any]) -> None:
    """Slow on the first attempt only: a re-delivered job finishes at once."""
    if job.attempt == 1:
        await asyncio.sleep(float((job.payload or {}).get("sleep", 0)))
