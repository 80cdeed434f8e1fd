"""A worker module for tests that run ``pgq-thin run observe_app:worker`` in subprocesses: one
entrypoint per way an attempt can end."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pgq_thin.job import CancelJob, Job, RetryAfter
from pgq_thin.worker import ThinWorker

worker = ThinWorker(poll_interval=1.0)


@dataclass
class Email:
    to: str


@worker.entrypoint("obs.ok")
async def ok(job: Job[Any]) -> dict[str, int]:
    return {"n": 1}


@worker.entrypoint("obs.fail")
def fail(job: Job[Any]) -> None:
    raise ValueError(f"boom on attempt {job.attempt}")


@worker.entrypoint("obs.retry")
async def retry(job: Job[Any]) -> None:
    raise RetryAfter(30)


@worker.entrypoint("obs.cancel")
async def cancel(job: Job[Any]) -> None:
    raise CancelJob("not needed any more")


@worker.entrypoint("obs.typed")
async def typed(job: Job[Email]) -> None:
    pass


async def handler_only(job: Job[Any]) -> None:
    """Not registered anywhere: ``pgq-thin run observe_app:handler_only`` is a mistake."""
