"""Keeping owned jobs alive: one ``pgq.heartbeat`` for every job the worker owns (running, or
finished with its result not yet written), every third of the smallest heartbeat timeout among
them, and at once when a cancel notification names one of them. The answer is the truth:
``lost`` stops a running attempt (a finished one is left to the write of its result, which
counts its ending: see ``Attempts.lose``), ``cancel_requested`` cancels it, ``timed_out`` (SQL
ended the attempt past its time limit) stops it. A job with a time limit (``run_timeout_s`` of
its claim) also gets a beat just after its deadline, so a hung handler is stopped when its
time is up, not at the next interval: the time is SQL's, the beat only asks.

The same call keeps the worker fresh in the registry (``pgq.workers``): once registered, it
beats at least every ``idle_interval`` (what ``pgq.register_worker`` answered), with empty
arrays while it owns no job."""

from __future__ import annotations

import asyncio
import time
import uuid

from pgq_thin import calls
from pgq_thin.logs import WorkerLog, worker_log
from pgq_thin.worker._attempts import Attempt, Attempts
from pgq_thin.worker._loops import LOOP_ERRORS, Call, jittered, one_line, wait_event


class Heartbeat:
    def __init__(
        self, worker_id: uuid.UUID, attempts: Attempts, call: Call, log: WorkerLog | None = None
    ) -> None:
        self._worker_id = worker_id
        self._log = log or worker_log(worker_id)
        self._attempts = attempts
        self._call = call
        self._now = asyncio.Event()
        self._beat_now = False  # wake() asked for a beat (else a wake-up only replans)
        attempts.on_deadline = self._now.set
        #: Longest pause between two beats while registered (None: beat only for owned jobs).
        self.idle_interval: float | None = None

    def wake(self) -> None:
        """Beat now (a cancel notification named one of the owned jobs)."""
        self._beat_now = True
        self._now.set()

    def _interval(self) -> float:
        """Until the next beat: a third of the smallest heartbeat timeout, at most the idle
        interval, and just after the earliest time limit of a job in hand (an overdue one is
        asked about again every quarter of a second)."""
        interval = self._attempts.heartbeat_interval()
        if self.idle_interval is not None:
            interval = min(interval, self.idle_interval)
        deadline = self._attempts.until_deadline()
        if deadline is not None:
            interval = min(interval, deadline + 0.05 if deadline > -0.05 else 0.25)
        return interval

    async def once(self) -> dict[int, str]:
        """Beat for every owned job with one call (registered: also with none, to stay fresh
        in the registry); returns ``{job id: state}``."""
        sent = list(self._attempts.owned.values())
        if not sent and self.idle_interval is None:
            return {}
        answers = await self._call(lambda conn: self._send(conn, sent))
        return self._attempts.apply_heartbeat(sent, answers)

    async def on_connection(self, conn: calls.AConn) -> None:
        """The first call on a new session connection, before anything else runs on it."""
        sent = list(self._attempts.owned.values())
        if sent:
            self._attempts.apply_heartbeat(sent, await self._send(conn, sent))

    async def _send(self, conn: calls.AConn, sent: list[Attempt]) -> list[tuple[int, str]]:
        ids, leases = [a.job.id for a in sent], [a.job.lease for a in sent]
        return await calls.aheartbeat(conn, self._worker_id, ids, leases)

    async def loop(self) -> None:
        changed = self._attempts.changed
        while True:
            if not self._attempts.owned:
                changed.clear()
                if self.idle_interval is None:
                    await changed.wait()
                    continue
                if await wait_event(changed, jittered(self.idle_interval) * 0.8):
                    continue  # a job came: beat on its interval
            else:
                due = time.monotonic() + self._interval()
                while not self._beat_now and self._attempts.owned:
                    remaining = due - time.monotonic()
                    if remaining <= 0:
                        break
                    await wait_event(self._now, remaining)
                    self._now.clear()
                    due = min(due, time.monotonic() + self._interval())  # a sooner deadline
                self._beat_now = False
            try:
                await self.once()
            except LOOP_ERRORS as err:
                self._log.warning(
                    "pgq-thin heartbeat failed (%s); next try at the next interval", one_line(err)
                )
