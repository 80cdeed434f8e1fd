"""Finished attempts waiting to be written with ``pgq.complete``, and the one way to take them.
A result is an attempt's :class:`~pgq_thin.worker._outcomes.Ending`, buffered under its lease.

Results are written in batches, by one of two writers: the claim loop, which sends them with
its next claim in one round trip (``pgq.complete`` then ``pgq.claim`` in a pipeline), or the
flush loop here (with ``results_connection``, it writes them all, on a connection of its own,
while claims go on). Both take results through :meth:`ResultBuffer.batch`; who writes is
decided by one rule the claim loop gives (:meth:`ResultBuffer.carried_by`): while it is about
to claim again (the last claim came back full and a slot is free), the flush loop leaves the
results to it; when it goes to wait, they are the flush loop's (at once when nothing else runs
or ``flush_size`` results wait, else after ``flush_interval``).

A write that fails keeps the results, with their leases, first in line for the next one. A
write the server refuses because of a value in it (a data error, a ``PQ`` error) is retried
one result at a time, so one bad result cannot hold back the others; a result refused alone
is sent again with its details replaced by a note saying why, and dropped if even that is
refused (its job then goes stale and is retried by SQL's rules).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import psycopg

from pgq_thin import calls
from pgq_thin.calls import Decision
from pgq_thin.connection import Backoff
from pgq_thin.errors import PgqError
from pgq_thin.worker._loops import LOOP_ERRORS, Call, one_line, wait_event
from pgq_thin.worker._outcomes import (
    CANCELED,
    DEAD,
    FAILED,
    FATAL,
    SNOOZED_STATUS,
    SUCCESSFUL,
    Details,
    Ending,
)
from pgq_thin.worker._settings import WorkerSettings, WorkerStats
from pgq_thin.worker._telemetry import Telemetry

MAX_FLUSH = 1000  # results per pgq.complete call
UNSTORABLE = "UnstorableDetails"
#: What the server refuses because of a value in the call (rather than the connection).
REFUSED: tuple[type[Exception], ...] = (psycopg.DataError, PgqError)


class Batch:
    """Results taken for one ``pgq.complete``; settle it with the ids the server accepted."""

    def __init__(self, buffer: ResultBuffer, results: list[Ending]) -> None:
        self._buffer = buffer
        self.results = results
        self.settled = False

    def __len__(self) -> int:
        return len(self.results)

    @property
    def args(self) -> tuple[list[int], list[int], list[str], list[Details]]:
        """The ``ids, leases, outcomes, details`` arrays. The leases are those of the claim,
        whatever connection the call ends up on (``pgq.complete`` is idempotent)."""
        rs = self.results
        return (
            [r.job_id for r in rs],
            [r.lease for r in rs],
            [r.outcome for r in rs],
            [r.details for r in rs],
        )

    def settle(self, accepted: dict[int, Decision]) -> None:
        """Account for the write: ``accepted`` is what SQL decided per job it accepted."""
        self.settled = True
        self._buffer._settle(self.results, accepted)


class ResultBuffer:
    """The buffered results of one run, and the flush loop that writes them."""

    def __init__(
        self,
        settings: WorkerSettings,
        stats: WorkerStats,
        call: Call,
        on_settled: Callable[[list[Ending]], None],
        telemetry: Telemetry,
    ) -> None:
        self._settings = settings
        self._tel = telemetry
        self._flush_at = settings.flush_at
        self._stats = stats
        self._call = call
        self._on_settled = on_settled
        self._pending: list[Ending] = []
        self._lock = asyncio.Lock()  # one write at a time: waiting for it means it is written
        self._ready = asyncio.Event()  # results wait
        self._now = asyncio.Event()  # ... and should be written without waiting
        self._claim_carries: Callable[[], bool] | None = None  # no claim carries results
        self._solo = 0  # results left to write one at a time after a refused batch

    def __len__(self) -> int:
        return len(self._pending)

    def report(self, result: Ending, *, alone: bool) -> None:
        """Buffer an attempt's ending; ``alone``: nothing else runs, so write it now."""
        self._pending.append(result)
        if alone or len(self._pending) >= self._flush_at:
            self._now.set()
        self._ready.set()

    def carried_by(self, will_claim: Callable[[], bool]) -> None:
        """The claim loop's rule: while ``will_claim()`` is true, its next claim writes the
        results in the same round trip, and the flush loop leaves them to it."""
        self._claim_carries = will_claim

    def hand_over(self) -> None:
        """The claim loop goes to wait: what waits is the flush loop's to write."""
        if self._pending:
            self._ready.set()

    def flush_soon(self) -> None:
        """Write what waits without delay (after a reconnect)."""
        if self._pending:
            self._now.set()
            self._ready.set()

    @asynccontextmanager
    async def batch(self, *, wait: bool = True) -> AsyncIterator[Batch | None]:
        """Take up to ``MAX_FLUSH`` results for one ``pgq.complete``: the one way to take
        results for a write. Yields None when there is nothing to write, or, with
        ``wait=False`` (a claim that would carry them), when a write is in flight or results
        are being written one at a time, or no claim carries results (``results_connection``:
        the flush loop writes them all). The caller writes ``batch.args`` and calls
        ``batch.settle``; if it raises instead, the results go back first in line."""
        if not wait and (
            self._claim_carries is None or not self._pending or self._lock.locked() or self._solo
        ):
            yield None
            return
        async with self._lock:
            taken = self._pending[: 1 if self._solo else MAX_FLUSH]
            del self._pending[: len(taken)]
            batch = Batch(self, taken)
            try:
                yield batch if taken else None
            except BaseException as err:
                if not batch.settled:
                    self._give_back(taken, err)
                raise

    def _give_back(self, taken: list[Ending], err: BaseException) -> None:
        back = taken
        if isinstance(err, REFUSED) and back:
            if len(back) > 1:
                self._solo = max(self._solo, len(back))
                self._tel.log.warning(
                    "pgq-thin: the server refused a batch of %d results (%s); writing them one "
                    "at a time",
                    len(back),
                    one_line(err),
                )
            elif (back[0].details or {}).get("error") != UNSTORABLE:
                (r,) = back
                note = {"error": UNSTORABLE, "message": f"the server refused: {one_line(err)}"}
                back = [dataclasses.replace(r, details=note)]
                self._tel.log.warning(
                    "pgq-thin: job %s: its result was refused (%s)", r.job_id, note
                )
            else:
                self._tel.log.error(
                    "pgq-thin: job %s: its result is refused even without details (%s); it is "
                    "left to go stale and be retried",
                    back[0].job_id,
                    one_line(err),
                )
                self._on_settled(back)
                return
        self._pending[:0] = back
        self._ready.set()

    def _settle(self, batch: list[Ending], accepted: dict[int, Decision]) -> None:
        """Account for written results: accepted ones by what SQL decided (an interrupted
        attempt sent back to the queue is counted as aborted already), the rest as lost
        leases. This is where a finished attempt's ending is counted, once: a heartbeat that
        answered ``lost`` for it meanwhile counted nothing (``Attempts.lose``)."""
        if self._solo:
            self._solo = max(0, self._solo - len(batch))
        rejected: list[int] = []
        stats = self._stats
        for r in batch:
            decided = accepted.get(r.job_id)
            if decided is None:
                rejected.append(r.job_id)
                stats.rejected += 1
                stats.lost += 1
            elif decided.status == SUCCESSFUL:
                stats.successful += 1
            elif decided.status == CANCELED:
                stats.canceled += 1
            else:
                if r.outcome in (FAILED, FATAL):
                    stats.failed += 1
                if decided.status == DEAD:
                    stats.dead += 1
                elif decided.status == SNOOZED_STATUS:
                    stats.snoozed += 1
        self._tel.written(batch, accepted)
        if rejected:
            self._tel.log.warning(
                "pgq-thin: %d result(s) not accepted, their lease was lost (the job went stale "
                "and was claimed again, or was cancelled): jobs %s",
                len(rejected),
                ", ".join(map(str, rejected[:20])) + (" ..." if len(rejected) > 20 else ""),
            )
        if self._pending:
            self._ready.set()
        self._on_settled(batch)

    async def flush_once(self) -> int:
        """Write up to ``MAX_FLUSH`` results with one ``pgq.complete``; returns how many were
        sent. On a failed call they stay buffered (with their leases) and the error is raised."""
        async with self.batch() as batch:
            if batch is None:
                return 0
            worker_id = self._settings.worker_id
            tel, args = self._tel, batch.args
            accepted = await self._call(
                lambda conn: tel.complete(calls.acomplete(conn, worker_id, *args))
            )
            batch.settle(accepted)
            return len(batch)

    async def flush_all(self) -> None:
        """Write everything (shutdown): refused results are split, replaced or dropped."""
        await self.flush_once()  # waits for a write in flight
        while self._pending:
            try:
                await self.flush_once()
            except REFUSED:
                continue

    async def loop(self) -> None:
        backoff = Backoff(base=0.2, cap=10.0)
        while True:
            await self._ready.wait()
            self._ready.clear()
            if not self._now.is_set():
                await wait_event(self._now, self._settings.flush_interval)
            self._now.clear()
            if self._claim_carries is not None and self._claim_carries() and not self._solo:
                continue  # the claim loop writes them with its next claim, in one round trip
            try:
                await self.flush_once()
                backoff.reset()
            except LOOP_ERRORS as err:
                delay = max(0.2, backoff.next_delay())
                self._tel.log.warning(
                    "pgq-thin complete failed (%s); retrying in %.1f s", one_line(err), delay
                )
                await asyncio.sleep(delay)
                self._ready.set()
