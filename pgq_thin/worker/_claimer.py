"""Claiming: the claim loop, claim-ahead, the idle wait, wake-ups, and giving jobs back.

When it has free slots the loop claims ``min(batch_size, free slots)`` jobs of its entrypoints
and starts them (``prefetch`` counts that many more slots: the jobs claimed beyond the free ones
wait in the worker, owned, and start as slots free). Otherwise a job is claimed only when it can
start at once: a worker that claims sync entrypoints also counts its free threads
(``threads``), so it never holds jobs waiting for a thread that another worker could be
running. Sync and async share the worker fairly: while a thread is free, a claim asks for
every entrypoint (at most as many jobs as free threads, each in priority and ready order, so
a burst of async jobs never holds back sync jobs enqueued after it longer than its turn);
while every thread is busy, the claim asks for the async entrypoints alone, with every free
slot (busy threads never stop async jobs). It claims again at once while
claims come back full; otherwise it waits for a notification about one of its entrypoints, a
slot to free up, the (jittered) poll, or the next delayed job being due or a rate limit letting
the next job start (``pgq.next_run_at``, asked after every claim that did not come back full),
whichever is first; an entrypoint whose whole rate budget is used up (``pgq.rate_waits``, asked
with it) wakes nothing on its notifications until then. A full claim that
leaves slots free sends the claim of the next batch before its own jobs are taken in (claim
ahead: the server claims while the process runs jobs; ``concurrency = 2 * batch_size`` gives it
room), sized to the slots left once the jobs just claimed have started. Buffered results ride
along with a claim (``ResultBuffer.batch``), unless they have a connection of their own
(``results_connection``). A claimed row that cannot be turned into Python
values fails that job alone (a failure, not fatal: a retry rewrites a due time Python cannot
hold, so such a job can heal); the rest of the batch runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable
from typing import Any

from pgq_thin import calls
from pgq_thin.connection import Backoff
from pgq_thin.job import Job, UndecodableJob
from pgq_thin.worker._attempts import Attempts
from pgq_thin.worker._loops import LOOP_ERRORS, Call, jittered, one_line, wait_event
from pgq_thin.worker._outcomes import FAILED, Ending
from pgq_thin.worker._results import ResultBuffer
from pgq_thin.worker._settings import WorkerSettings, WorkerStats
from pgq_thin.worker._telemetry import Telemetry

Rows = list[tuple[Any, ...]]


class Claimer:
    def __init__(
        self,
        settings: WorkerSettings,
        stats: WorkerStats,
        entrypoints: frozenset[str],
        async_entrypoints: frozenset[str],
        attempts: Attempts,
        results: ResultBuffer,
        call: Call,
        stopping: asyncio.Event,
        tick: asyncio.Event,
        telemetry: Telemetry,
        with_parent_results: frozenset[str] = frozenset(),
        *,
        carry: bool = True,
    ) -> None:
        self._settings = settings
        self._tel = telemetry
        self._stats = stats
        self._claimed = entrypoints
        self._entrypoints = sorted(entrypoints)
        # Some of them have sync handlers (each needs a thread to start): the async ones alone
        # are claimed while every thread is busy.
        self._sync = bool(entrypoints - async_entrypoints)
        self._async = sorted(entrypoints & async_entrypoints)
        self._attempts = attempts
        self._with_parents = with_parent_results  # read their parents' results first
        self._results = results
        self._call = call
        self._stopping = stopping
        self._tick = tick  # something changed (a slot freed, a result written): look again
        self._notified = False  # a notification (or a reconnect) asks for one claim
        self._more = False  # the last claim came back full: claim again at once
        self._replan = False  # a job was scheduled: ask when the next one is due
        # Entrypoints whose rate budget is used up (pgq.rate_waits), each until the monotonic
        # time one more start fits: their enqueue notifications wake nothing before then.
        self._rate_waits: dict[str, float] = {}
        if carry:  # else results have a connection of their own (results_connection)
            results.carried_by(self._will_claim)

    def _will_claim(self) -> bool:
        """About to claim again at once: the claim carries the buffered results."""
        return self._more and self._plan()[0] > 0 and not self._stopping.is_set()

    def _plan(self, claimed: int = 0, claimed_sync: int = 0) -> tuple[int, list[str]]:
        """The next claim: how many jobs (at most ``batch_size``) of which entrypoints, only
        jobs that could start now (``claimed`` more taken in, ``claimed_sync`` of them perhaps
        sync). Free slots, and for a worker with sync entrypoints free threads: while one is
        free every entrypoint (as many jobs as threads, any might be sync), else the async
        entrypoints alone with every free slot. A claim never asks for more (claim ahead
        included). With ``prefetch``, the slots count that many more, less the jobs already
        waiting for one."""
        settings, attempts = self._settings, self._attempts
        slots = settings.concurrency + settings.prefetch - attempts.running - attempts.waiting
        slots -= claimed
        if not self._sync:
            return min(settings.batch_size, slots), self._entrypoints
        threads = settings.threads - attempts.running_sync - claimed_sync
        if threads > 0 or not self._async:
            return min(settings.batch_size, slots, threads), self._entrypoints
        return min(settings.batch_size, slots), self._async

    def kick(self) -> None:
        self._tick.set()

    def wake(self) -> None:
        """Claim once now (a reconnect: work may have come meanwhile)."""
        self._notified = True
        self._tick.set()

    def on_enqueued(self, entrypoints: frozenset[str]) -> None:
        """A notification: jobs of these entrypoints became runnable (unless SQL said their
        rate budget is used up until later: a claim would find nothing, the wait ends then)."""
        now = time.monotonic()
        if any(self._rate_waits.get(e, 0.0) <= now for e in entrypoints & self._claimed):
            self.wake()

    def on_scheduled(self, entrypoints: frozenset[str]) -> None:
        """A notification: jobs of these entrypoints will be due later. Nothing to claim now;
        ask ``pgq.next_run_at`` again, in case one is due before the loop would look."""
        if entrypoints & self._claimed:
            self._replan = True
            self._tick.set()

    # --- run-once steps -----------------------------------------------------------------------

    async def claim_once(self, *, start: bool = True) -> list[Job[Any]]:
        asked, entrypoints = self._plan()
        if asked <= 0 or not self._entrypoints:
            return []
        return await self._take_in(await self._claim_rows(asked, entrypoints), start=start)

    async def release_unstarted(self) -> list[int]:
        """Give back (``pgq.release``) claimed jobs whose handler has not started."""
        todo = self._attempts.take_unstarted()
        if not todo:
            return []
        ids, leases = [a.job.id for a in todo], [a.job.lease for a in todo]
        worker_id = self._settings.worker_id
        released = await self._call(lambda conn: calls.arelease(conn, worker_id, ids, leases))
        self._attempts.forget([(a.job.id, a.job.lease) for a in todo])
        self._stats.released += len(released)
        return released

    async def _claim_rows(self, asked: int, entrypoints: list[str]) -> Rows:
        """One ``pgq.claim`` of up to ``asked`` jobs, with buffered results written in the same
        round trip (unless a flush is writing them already). The claim carries a request id of
        its own: when the connection drops, the session sends the same call again, and a claim
        whose answer was lost answers the same jobs (not new ones, leaving those to go stale)."""
        worker_id, tel = self._settings.worker_id, self._tel
        request = uuid.uuid4()
        async with self._results.batch(wait=False) as batch:
            if batch is None:
                return await self._call(
                    lambda conn: tel.claim(
                        calls.aclaim(conn, worker_id, entrypoints, asked, request)
                    )
                )
            done = batch.args
            accepted, rows = await self._call(
                lambda conn: tel.complete_and_claim(
                    calls.acomplete_and_claim(conn, worker_id, done, entrypoints, asked, request)
                )
            )
            batch.settle(accepted)
            return rows

    async def _take_in(self, rows: Rows, *, start: bool) -> list[Job[Any]]:
        """Own the claimed rows: jobs started (or, when stopping, released at once), those of
        entrypoints registered with ``parent_results`` once their parents' results are read. A
        row that cannot be decoded is completed as failed at once."""
        jobs: list[Job[Any]] = []
        for row in rows:
            try:
                jobs.append(Job.from_claimed(row))
            except UndecodableJob as err:
                self._fail_undecodable(err)
        self._stats.claimed += len(rows)
        self._stats.taken_over += self._tel.claimed(jobs)
        new = self._attempts.take_in(jobs)  # owned (heartbeats cover them) from here
        fan_in = [job for job in jobs if job.entrypoint in self._with_parents]
        if fan_in and not self._stopping.is_set():
            ids = [job.id for job in fan_in]
            parents = await self._call(lambda conn: calls.aparent_results(conn, ids))
            for job in fan_in:
                job.parent_results = parents[job.id]
        if self._stopping.is_set():
            await self.release_unstarted()
        elif start:
            for attempt in new:
                self._attempts.start(attempt)
        return jobs

    def _fail_undecodable(self, err: UndecodableJob) -> None:
        fields = {"job_id": err.job_id, "entrypoint": err.entrypoint}
        self._tel.undecodable(str(err), fields)
        self._stats.undecodable += 1
        details = {"error": "UndecodableJob", "message": str(err)}
        ending = Ending(FAILED, details, "undecodable").for_claim(
            err.job_id, err.lease, err.entrypoint, 0.0
        )
        self._results.report(ending, alone=self._attempts.running == 0)

    # --- the loop -----------------------------------------------------------------------------

    async def loop(
        self, until_empty: bool, check: Callable[[], None], started: Callable[[], None]
    ) -> None:
        """Claim until stopped (``until_empty``: until a claim finds nothing and nothing runs).
        ``check`` raises the failure of another loop, which ends the run; ``started`` is called
        once the first claim came back (at once for a worker with nothing to claim)."""
        if not self._entrypoints:  # a scheduler-only worker: nothing to claim
            started()
            while not self._stopping.is_set():
                check()
                self._tick.clear()
                await self._tick.wait()
            return
        settings, attempts = self._settings, self._attempts
        self._more = True  # at start, there is probably work
        next_poll = 0.0
        backoff = Backoff(base=0.5, cap=30.0)
        announce: Callable[[], None] | None = started
        # A claim sent before the last claim's jobs were taken in: asked, of which, the call.
        ahead: tuple[int, list[str], asyncio.Task[Rows]] | None = None
        try:
            while not self._stopping.is_set():
                check()
                self._tick.clear()
                if self._replan:
                    self._replan = False
                    with contextlib.suppress(*LOOP_ERRORS):  # else the next poll looks
                        next_poll = min(next_poll, time.monotonic() + await self._idle())
                free, entrypoints = self._plan()
                drained = until_empty and not attempts.running
                due = self._notified or self._more or time.monotonic() >= next_poll or drained
                if ahead is None and not (free > 0 and due):
                    self._results.hand_over()
                    await wait_event(self._tick, max(0.0, next_poll - time.monotonic()))
                    continue
                self._notified = False
                try:
                    if ahead is not None:
                        (asked, entrypoints, claiming), ahead = ahead, None
                        rows = await claiming
                    else:
                        asked = free
                        rows = await self._claim_rows(asked, entrypoints)
                    if announce is not None:
                        announce()
                        announce = None
                    self._more = len(rows) == asked
                    # Once these rows have started (any of them sync, if sync ones were asked).
                    maybe_sync = len(rows) if self._sync and entrypoints is self._entrypoints else 0
                    n, next_eps = self._plan(len(rows), maybe_sync)
                    if self._more and n > 0 and not self._stopping.is_set():
                        # Claim the next batch now: the database works on it while this
                        # process starts and runs the jobs just claimed. Let it send first.
                        ahead = (n, next_eps, asyncio.create_task(self._claim_rows(n, next_eps)))
                        await asyncio.sleep(0)
                    await self._take_in(rows, start=True)
                    if not rows and drained:
                        return  # nothing ran, nothing was left to write, nothing came back
                    if until_empty and not attempts.running:
                        continue  # re-check at once whether the queue is drained
                    # Not a full claim: sleep until the poll or the next delayed job is due.
                    if rows and not self._more:
                        await asyncio.sleep(0)  # the jobs just taken in start before that call
                    wait = jittered(settings.poll_interval) if self._more else await self._idle()
                    next_poll = time.monotonic() + wait
                    backoff.reset()
                except LOOP_ERRORS as err:  # a lost connection never gets here: the session
                    delay = max(0.5, backoff.next_delay())  # reconnects and re-runs the call
                    self._tel.log.warning(
                        "pgq-thin claim failed (%s); retrying in %.1f s", one_line(err), delay
                    )
                    self._more = False
                    next_poll = time.monotonic() + delay
        finally:
            self._more = False
            self._results.hand_over()
            if ahead is not None:
                await self._take_in_unstarted(ahead[2])

    async def _idle(self) -> float:
        """How long to sleep: the poll, or less if a delayed job is due (or a rate limit lets
        the next job start) before it."""
        wait = jittered(self._settings.poll_interval)
        entrypoints = self._entrypoints
        due_in, waits = await self._call(lambda conn: calls.anext_due_in(conn, entrypoints))
        now = time.monotonic()
        self._rate_waits = {e: now + s for e, s in waits.items()}
        if due_in is not None:
            wait = min(wait, max(due_in, 0.0) + 0.005)
        return wait

    async def _take_in_unstarted(self, claiming: asyncio.Task[Rows]) -> None:
        """The loop ends with a claim in flight: its jobs are taken in unstarted, to be
        released (at once when stopping, else by the shutdown) rather than left to go stale.
        Cancelled, it cancels the claim too (jobs of a claim that committed then go stale)."""
        try:
            rows = await claiming
        except asyncio.CancelledError:
            claiming.cancel()
            raise
        except Exception as err:
            self._tel.log.warning("pgq-thin claim failed (%s)", one_line(err))
            return
        await self._take_in(rows, start=False)
