"""Supervision: restarting a failed run, signals, and leaving threads that cannot be stopped.

The supervisor restarts only what a restart can cure: a lost connection that did not come back
within ``reconnect_timeout``, a server restart, a loop that failed with an unexpected error. A
run that fails before it ever connected (a bad DSN), a worker without entrypoints, and a
:class:`~pgq_thin.errors.SetupError` (schema missing, grant missing) are raised at once.
"""

from __future__ import annotations

import asyncio
import logging
import os
import random
import signal
import threading
import time
from collections.abc import Awaitable, Callable

from pgq_thin.errors import SetupError
from pgq_thin.logs import worker_log
from pgq_thin.worker._registry import UnknownEntrypoint
from pgq_thin.worker._settings import WorkerSettings, WorkerStats

log = logging.getLogger("pgq_thin.worker")

#: The most time between two restarts.
RESTART_DELAY_CAP = 30.0


async def supervise(
    run_once: Callable[[], Awaitable[None]],
    settings: WorkerSettings,
    stats: WorkerStats,
    *,
    connected: Callable[[], bool],
    halted: Callable[[], bool],
) -> None:
    """Call ``run_once`` until it returns; after a failure that a restart may cure, call it
    again after a backoff, up to ``max_restarts`` times in a row (the count resets after a run
    that lasted ``restart_reset_after`` seconds). ``connected``: the last run got as far as an
    open connection; ``halted``: a stop was asked for (no restart)."""
    log = worker_log(settings.worker_id)
    restarts = 0
    started_once = False
    while True:
        begun = time.monotonic()
        try:
            await run_once()
            return
        except SetupError:
            raise  # no restart can fix it; raised once, with the fix in its message
        except (UnknownEntrypoint, asyncio.CancelledError):
            raise
        except Exception as err:
            started_once = started_once or connected()
            if not (settings.restart_on_failure and started_once) or halted():
                raise
            if time.monotonic() - begun >= settings.restart_reset_after:
                restarts = 0
            restarts += 1
            if restarts > settings.max_restarts:
                log.error(
                    "pgq-thin worker %s failed %d times in a row; giving up: %r",
                    settings.worker_id,
                    restarts,
                    err,
                )
                raise
            delay = min(RESTART_DELAY_CAP, settings.restart_delay * 2 ** (restarts - 1))
            delay *= random.uniform(0.5, 1.0)
            log.error(
                "pgq-thin worker %s failed (%r); restart %d of %d in %.1f s",
                settings.worker_id,
                err,
                restarts,
                settings.max_restarts,
                delay,
                exc_info=err,
            )
            stats.restarts += 1
            deadline = time.monotonic() + delay
            while not halted() and time.monotonic() < deadline:
                await asyncio.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
            if halted():
                return


#: The signals that stop a worker gracefully (SIGHUP where the platform has it).
STOP_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT) + (
    (signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()
)


class Signals:
    """SIGTERM, SIGINT and SIGHUP (a closed terminal or SSH session): the first asks for a
    graceful stop, the second exits at once."""

    def __init__(self, grace_period: float, request_stop: Callable[[], None]) -> None:
        self._grace_period = grace_period
        self._request_stop = request_stop
        self._received = 0
        self._installed: list[signal.Signals] = []

    def install(self, loop: asyncio.AbstractEventLoop, enabled: bool | None) -> None:
        """Install the handlers (by default only from the main thread)."""
        if enabled is None:
            enabled = threading.current_thread() is threading.main_thread()
        if not enabled:
            return
        for sig in STOP_SIGNALS:
            try:
                loop.add_signal_handler(sig, self._on_signal, sig)
                self._installed.append(sig)
            except (NotImplementedError, RuntimeError):  # not on this platform/loop
                pass

    def remove(self, loop: asyncio.AbstractEventLoop) -> None:
        for sig in self._installed:
            loop.remove_signal_handler(sig)
        self._installed.clear()

    def _on_signal(self, sig: signal.Signals) -> None:
        self._received += 1
        if self._received == 1:
            log.warning(
                "pgq-thin worker got %s: finishing running jobs (up to %g s); "
                "send it again to exit at once",
                sig.name,
                self._grace_period,
            )
            self._request_stop()
        else:
            log.warning("pgq-thin worker got %s again: exiting now", sig.name)
            logging.shutdown()
            os._exit(128 + int(sig))


def abandon_stuck_threads(stats: WorkerStats) -> None:
    """After a shutdown that had to abort sync handlers, end the process now: their threads
    cannot be killed and would keep it alive. Results are already written."""
    if stats.aborted and any(
        t.name.startswith("pgq-thin-job") and t.is_alive() for t in threading.enumerate()
    ):
        log.warning("pgq-thin: sync handlers still running after shutdown; exiting anyway")
        logging.shutdown()
        os._exit(0)
