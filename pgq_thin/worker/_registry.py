"""What a worker runs: handlers by entrypoint, the schedules it fires, the entrypoints it claims."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar

from pgq_thin.cron import CronSchedule
from pgq_thin.entrypoints import Entrypoint
from pgq_thin.errors import PgqThinError
from pgq_thin.job import Job, is_model, payload_type_of
from pgq_thin.scheduler import ScheduleSpec

HandlerFn = Callable[[Job[Any]], Any]
H = TypeVar("H", bound=HandlerFn)
P = TypeVar("P")
R = TypeVar("R")


class UnknownEntrypoint(PgqThinError):
    """An entrypoint name the worker has no handler for."""


@dataclass(frozen=True)
class Handler:
    name: str
    fn: HandlerFn
    is_async: bool
    payload_type: type | None
    #: the worker reads the job's parents' results (pgq.parent_results) before it starts
    parent_results: bool = False


class Registry:
    """Handlers, schedules and the optional restriction to some entrypoints (``restrict``)."""

    def __init__(self) -> None:
        self.handlers: dict[str, Handler] = {}
        self._schedules: dict[str, ScheduleSpec] = {}
        self._only: frozenset[str] | None = None

    def entrypoint(
        self, name: str, *, payload_type: type | None = None, parent_results: bool = False
    ) -> Callable[[Callable[[Job[P]], R]], Entrypoint[P, R]]:
        if not name:
            raise ValueError("an entrypoint needs a non-empty name")
        if payload_type is not None and not is_model(payload_type):
            raise TypeError(f"payload_type must be a dataclass or pydantic model: {payload_type}")

        def register(fn: Callable[[Job[P]], R]) -> Entrypoint[P, R]:
            if isinstance(fn, Entrypoint):  # one function, two entrypoints
                fn = fn.fn
            if not callable(fn):
                raise TypeError(
                    f"the handler of entrypoint {name!r} must be a function taking a Job, "
                    f"got {type(fn).__name__}"
                )
            if name in self.handlers:
                raise ValueError(f"entrypoint {name!r} is already registered")
            handler = Handler(
                name=name,
                fn=fn,
                is_async=inspect.iscoroutinefunction(fn),
                payload_type=payload_type or payload_type_of(fn),
                parent_results=parent_results,
            )
            self.handlers[name] = handler
            return Entrypoint(name, fn, handler.payload_type)

        return register

    def schedule(
        self,
        cron: str,
        entrypoint: str,
        *,
        name: str | None,
        timezone: str,
        payload: Any,
        priority: int,
        headers: dict[str, Any] | None,
        catch_up: str,
        misfire_grace: timedelta | None,
        fire_timeout: timedelta | None,
    ) -> Callable[[Callable[[Job[P]], R]], Entrypoint[P, R]]:
        spec = ScheduleSpec(
            cron=CronSchedule(cron, timezone),
            entrypoint=entrypoint,
            name=name or entrypoint,
            payload=payload,
            priority=priority,
            headers=headers,
            catch_up=catch_up,
            misfire_grace=misfire_grace,
            fire_timeout=fire_timeout,
        )
        if spec.name in self._schedules:
            raise ValueError(
                f"schedule {spec.name!r} is already registered; pass name= to tell them apart"
            )
        self._schedules[spec.name] = spec

        def register(fn: Callable[[Job[P]], R]) -> Entrypoint[P, R]:
            return self.entrypoint(entrypoint)(fn)

        return register

    @property
    def schedules(self) -> list[ScheduleSpec]:
        return list(self._schedules.values())

    @property
    def claimed(self) -> frozenset[str]:
        """The entrypoints the worker claims: all registered, or the restricted set."""
        return frozenset(self.handlers) if self._only is None else self._only

    @property
    def claimed_async(self) -> frozenset[str]:
        """The claimed entrypoints whose handlers are async (they need a slot, no thread)."""
        return frozenset(name for name in self.claimed if self.handlers[name].is_async)

    @property
    def with_parent_results(self) -> frozenset[str]:
        """The claimed entrypoints whose jobs get their parents' results before they start."""
        return frozenset(name for name in self.claimed if self.handlers[name].parent_results)

    @property
    def claims_sync(self) -> bool:
        """Some entrypoint the worker claims has a sync handler (it runs on a thread)."""
        return any(not self.handlers[name].is_async for name in self.claimed)

    def restrict(self, names: Iterable[str]) -> None:
        wanted = frozenset(names)
        unknown = sorted(wanted - self.handlers.keys())
        if unknown:
            known = ", ".join(sorted(self.handlers)) or "none"
            raise UnknownEntrypoint(
                f"unknown entrypoint(s) {', '.join(unknown)}; this worker has: {known}"
            )
        self._only = wanted or None

    def check_runnable(self) -> None:
        if not self.handlers and not self._schedules:
            raise UnknownEntrypoint("the worker has no entrypoints: register a handler first")
