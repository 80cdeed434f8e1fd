"""Wake-ups: LISTEN on ``pgq_events`` on a dedicated autocommit connection.

Notifications are hints (DESIGN.md principle 5): the worker's poll finds work without them.
The listener reconnects with backoff when its connection fails, and after every (re)connect
calls ``on_connect`` so the worker polls once for whatever it may have missed.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable
from typing import Any

from pgq_thin import calls
from pgq_thin.connection import aconnect

log = logging.getLogger(__name__)

Event = dict[str, Any]


class Listener:
    """Runs until cancelled; hands each decoded ``pgq_events`` payload to ``on_event``."""

    def __init__(
        self,
        dsn: str,
        on_event: Callable[[Event], None],
        on_connect: Callable[[], None],
        *,
        check_interval: float = 5.0,
    ) -> None:
        self._dsn = dsn
        self._on_event = on_event
        self._on_connect = on_connect
        self._check_interval = check_interval
        self.ready = asyncio.Event()

    async def run(self) -> None:
        backoff = 0.5
        while True:
            try:
                conn = await aconnect(self._dsn)
                try:
                    await calls.alisten(conn)
                    self.ready.set()
                    backoff = 0.5
                    self._on_connect()
                    while not conn.broken:
                        async for note in conn.notifies(timeout=self._check_interval):
                            self._dispatch(note.payload)
                finally:
                    self.ready.clear()
                    await conn.close()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                delay = backoff * (0.5 + random.random())
                log.warning("pgq-thin listener failed (%s); reconnecting in %.1f s", err, delay)
                await asyncio.sleep(delay)
                backoff = min(backoff * 2, 30.0)

    def _dispatch(self, payload: str) -> None:
        try:
            event = json.loads(payload)
        except ValueError:
            log.debug("ignoring a pgq_events payload that is not JSON: %r", payload)
            return
        if isinstance(event, dict):
            self._on_event(event)
