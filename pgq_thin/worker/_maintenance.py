"""The maintenance steps a worker runs periodically (see ``_loops.every``): pruning the
history, ``pgq.maintain`` (stale jobs, due jobs, the ring of ``pgq.jobs``), and folding finished
jobs into the metrics (with pruning the workers gone from the registry). Each is one run-once
step; the decisions (what is old, what is stale or due, which slot to truncate, what is
counted, who is gone) are made by the SQL functions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any

from pgq_thin import _api, calls
from pgq_thin._sql_runner import arun
from pgq_thin.connection import aconnect, short_id
from pgq_thin.records import Rollup
from pgq_thin.worker._loops import Call, every
from pgq_thin.worker._settings import WorkerSettings, WorkerStats

Log = logging.Logger | logging.LoggerAdapter  # type: ignore[type-arg]

log: Log = logging.getLogger("pgq_thin.worker")

#: Most pgq.prune_history batches (of calls.PRUNE_BATCH rows) in one maintenance pass.
MAINTENANCE_BATCHES = 20


async def prune_once(
    call: Call, retention: timedelta | None, at: datetime | None = None, logger: Log = log
) -> int:
    """Prune ``pgq.job_history`` of jobs finished more than ``retention`` ago, in batches, at
    most ``MAINTENANCE_BATCHES`` per pass; returns the rows deleted (0 when retention is None)."""
    if retention is None:
        return 0
    deleted = 0
    for _ in range(MAINTENANCE_BATCHES):
        n = await call(lambda conn: calls.aprune_history(conn, retention, at))
        deleted += n
        if n < calls.PRUNE_BATCH:
            break
    if deleted:
        logger.info("pgq-thin pruned %d finished jobs older than %s", deleted, retention)
    return deleted


async def maintain_once(
    call: Call,
    stats: WorkerStats | None = None,
    logger: Log = log,
    min_interval: timedelta | None = None,
) -> calls.Row:
    """Call ``pgq.maintain`` once; returns its row (state, swept, promoted, carried, truncated,
    rotated, lock_wait_ms, bytes). With ``min_interval`` the call is ``recent`` (nothing done)
    when any pass is younger. One DEBUG line per call: a call every few seconds is routine, a
    truncation included."""
    row = await call(lambda conn: calls.amaintain(conn, min_interval))
    if stats is not None and row["state"] == "ok":
        stats.maintained += 1
        if row["truncated"] is not None:
            stats.truncated += 1
    logger.debug(
        "pgq-thin maintain: %s, swept %s, promoted %s, carried %s, truncated %s, rotated %s,"
        " lock wait %s ms, ring %.2f MiB",
        row["state"],
        row["swept"],
        row["promoted"],
        row["carried"],
        row["truncated"],
        row["rotated"],
        row["lock_wait_ms"],
        (row["bytes"] or 0) / 2**20,
    )
    return row


async def rollup_once(call: Call, logger: Log = log) -> Rollup:
    """One step of ``pgq.rollup_metrics`` (never waiting for another worker doing it: then
    ``busy``), and ``pgq.prune_workers`` (workers gone long ago that hold no job)."""
    pruned = await call(lambda conn: arun(conn, _api.prune_workers()))
    if pruned:
        logger.info("pgq-thin removed %d workers gone from the registry", pruned)
    return await call(lambda conn: arun(conn, _api.rollup_metrics()))


class Maintenance:
    """The maintenance steps of one run, on its session (the rollup on a connection of its
    own), and the periodic loops the settings ask for."""

    def __init__(
        self, settings: WorkerSettings, stats: WorkerStats, call: Call, dsn: str, logger: Log
    ) -> None:
        self._settings = settings
        self._stats = stats
        self._call = call
        self._dsn = dsn
        self._log = logger

    async def prune_once(self, at: datetime | None = None) -> int:
        return await prune_once(self._call, self._settings.history_retention, at, self._log)

    async def maintain_once(self, in_turn: bool = False) -> calls.Row:
        """``in_turn`` (the loop's call): ``recent`` when any worker's pass is younger than half
        this worker's ``maintain_interval``, so a fleet makes about two passes per interval
        between them, however many workers it has."""
        interval = self._settings.maintain_interval
        half = timedelta(seconds=interval / 2) if in_turn and interval is not None else None
        return await maintain_once(self._call, self._stats, self._log, half)

    async def rollup_once(self) -> Rollup:
        """On a connection of its own, opened for the step: a rollup can take a second at
        high job rates, and on the session it would hold up the claims for that long."""
        name = f"pgq-thin worker {short_id(self._settings.worker_id)} rollup"
        async with await aconnect(self._dsn, application_name=name) as conn:
            return await rollup_once(lambda fn: fn(conn), self._log)

    def loops(self, stopping: asyncio.Event) -> dict[str, Coroutine[Any, Any, None]]:
        """The loops to run until ``stopping``, by task name: pruning (with
        ``history_retention``), the rollup (``rollup_interval``), pgq.maintain
        (``maintain_interval``)."""
        settings, log = self._settings, self._log
        loops: dict[str, Coroutine[Any, Any, None]] = {}
        if settings.history_retention is not None:
            loops["pgq-thin-maintenance"] = every(
                settings.maintenance_interval, self.prune_once, stopping, "pruning", log
            )
        if settings.rollup_interval is not None:
            loops["pgq-thin-rollup"] = every(
                settings.rollup_interval, self.rollup_once, stopping, "rollup", log
            )
        if settings.maintain_interval is not None:
            loops["pgq-thin-maintain"] = every(
                settings.maintain_interval,
                lambda: self.maintain_once(in_turn=True),
                stopping,
                "maintain",
                log,
            )
        return loops
