"""The parameters of the statements in :mod:`pgq_thin.calls`, and the shape of their answers.

No SQL here: Python values turned into the arguments the ``pgq`` functions take (JSON values for
many jobs as one JSON array, delays as intervals) and :class:`Decision`, what ``pgq.complete``
answers per job.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from psycopg.types.json import Jsonb


class Decision(NamedTuple):
    """What ``pgq.complete`` decided for one job: ``status`` successful, failed (dead),
    canceled or retry; the attempt that ended; and for a retry, in how many seconds it runs
    again (on the server's clock)."""

    status: str
    attempt: int
    max_attempts: int
    retry_in_s: float | None


def jsonb(value: Any) -> Jsonb | None:
    """A JSON value for a ``jsonb`` parameter; None stays SQL NULL."""
    return None if value is None else Jsonb(value)


def enqueue_args(
    entrypoint: str,
    payload: Any,
    priority: int,
    run_at: datetime | None,
    dedupe_key: str | None,
    headers: dict[str, Any] | None,
    on_conflict: str,
    delay: timedelta | None = None,
) -> tuple[Any, ...]:
    return (
        entrypoint,
        jsonb(payload),
        priority,
        run_at,
        dedupe_key,
        jsonb(headers),
        on_conflict,
        delay,
    )


def enqueue_many_args(
    entrypoints: Sequence[str],
    payloads: Sequence[Any] | None,
    priorities: Sequence[int] | None,
    run_ats: Sequence[datetime | None] | None,
    dedupe_keys: Sequence[str | None] | None,
    headers: Sequence[dict[str, Any] | None] | None,
    on_conflict: str,
    delays: Sequence[timedelta | None] | None = None,
) -> tuple[Any, ...]:
    return (
        list(entrypoints),
        None if payloads is None else Jsonb(list(payloads)),
        None if priorities is None else list(priorities),
        None if run_ats is None else list(run_ats),
        None if dedupe_keys is None else list(dedupe_keys),
        None if headers is None else Jsonb(list(headers)),
        on_conflict,
        None if delays is None else list(delays),
    )


def complete_args(
    worker_id: uuid.UUID,
    ids: Sequence[int],
    leases: Sequence[int],
    outcomes: Sequence[str],
    details: Sequence[Any] | None = None,
) -> tuple[Any, ...]:
    """Parameters of :data:`COMPLETE`."""
    packed = None if details is None or all(d is None for d in details) else Jsonb(list(details))
    return (
        worker_id,
        ",".join(map(str, ids)),
        ",".join(map(str, leases)),
        ",".join(outcomes),
        packed,
    )


def decisions(rows: Sequence[Sequence[Any]]) -> dict[int, Decision]:
    """The rows of :data:`COMPLETE` by job id."""
    return {
        int(r[0]): Decision(str(r[1]), int(r[2]), int(r[3]), None if r[4] is None else float(r[4]))
        for r in rows
    }


def schedule_args(
    name: str,
    entrypoint: str,
    cron: str,
    next_run_at: datetime,
    timezone: str,
    payload: Any,
    priority: int,
    headers: dict[str, Any] | None,
    catch_up: str,
    misfire_grace: timedelta | None = None,
    fire_timeout: timedelta | None = None,
) -> tuple[Any, ...]:
    return (
        name,
        entrypoint,
        cron,
        next_run_at,
        timezone,
        jsonb(payload),
        priority,
        jsonb(headers),
        catch_up,
        misfire_grace,
        fire_timeout,
    )


def configure_args(
    entrypoint: str,
    concurrency_limit: int | None,
    max_attempts: int | None,
    backoff_base: timedelta | None,
    backoff_max: timedelta | None,
    heartbeat_timeout: timedelta | None,
    reset: bool,
) -> tuple[Any, ...]:
    return (
        entrypoint,
        concurrency_limit,
        max_attempts,
        backoff_base,
        backoff_max,
        heartbeat_timeout,
        reset,
    )
