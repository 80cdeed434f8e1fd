"""The run-once steps of a worker: one step of a loop at a time, on the open run (methods of
:class:`~pgq_thin.worker.ThinWorker`, for tests, embedding and the CLI; ``arun`` runs the
loops instead)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pgq_thin import calls
from pgq_thin.job import Job
from pgq_thin.records import Rollup
from pgq_thin.worker._run import Run


class WorkerSteps:
    """One step of each loop, on the open run (``async with worker:`` or ``open()`` first)."""

    _run: Run | None

    def _opened(self) -> Run:
        if self._run is None:
            raise RuntimeError("the worker is not open: use `async with worker:` or open()")
        return self._run

    async def claim_once(self, *, start: bool = True) -> list[Job[Any]]:
        """Claim up to ``min(batch_size, free slots)`` jobs and start them (unless
        ``start=False``: then they stay claimed but unstarted, see :meth:`release_unstarted`).
        Jobs claimed while stopping are released at once."""
        return await self._opened().claimer.claim_once(start=start)

    async def flush_once(self) -> int:
        """Write buffered results with one ``pgq.complete`` call; returns how many were sent.
        On a failed call the results stay buffered (with their leases) and the error is raised."""
        return await self._opened().results.flush_once()

    async def heartbeat_once(self) -> dict[int, str]:
        """One ``pgq.heartbeat`` for every owned job, acting on the answers; ``{id: state}``."""
        return await self._opened().heartbeat.once()

    async def release_unstarted(self) -> list[int]:
        """Give back (``pgq.release``) claimed jobs whose handler has not started."""
        return await self._opened().claimer.release_unstarted()

    async def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no handler runs; True if that happened within ``timeout``."""
        return await self._opened().attempts.wait_idle(timeout)

    async def shutdown(self) -> None:
        """Graceful end: no new claims, running jobs get ``grace_period`` to finish, the rest
        are cancelled and reported ``interrupted`` (SQL queues them again at once), unstarted
        ones released, results flushed."""
        await self._opened().shutdown()

    async def prune_once(self, at: datetime | None = None) -> int:
        """Prune ``pgq.job_history`` of jobs finished more than ``history_retention`` ago, in
        batches, at most 20 per pass; returns the rows deleted."""
        return await self._opened().maintenance.prune_once(at)

    async def maintain_once(self, *, in_turn: bool = False) -> calls.Row:
        """Call ``pgq.maintain`` once (see ``maintain_interval``); returns its row (state,
        swept, promoted, carried, truncated, rotated, lock_wait_ms, bytes). ``in_turn`` makes
        the call the worker's loop makes: ``recent`` (nothing done) when any worker's pass is
        younger than half of ``maintain_interval``."""
        return await self._opened().maintenance.maintain_once(in_turn)

    async def rollup_once(self) -> Rollup:
        """One step of ``pgq.rollup_metrics`` and ``pgq.prune_workers`` (see
        ``rollup_interval``); returns the rollup's answer."""
        return await self._opened().maintenance.rollup_once()

    async def schedule_once(self, at: datetime | None = None) -> list[calls.Row]:
        """Fire the due ticks of all schedules (run-once step of the scheduler loop)."""
        return await self._opened().schedule_once(at)
