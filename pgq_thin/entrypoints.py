"""Typed handles: what ``@worker.entrypoint("name")`` returns.

::

    @worker.entrypoint("send_email")
    async def send_email(job: Job[Email]) -> None: ...

    send_email.enqueue(queue, Email("a@b.c", "hi"), priority=5)   # checked: an Email
    queue.enqueue(send_email, Email("a@b.c", "hi"))                # a handle where a name goes

The handle is the handler still (calling it calls the function, so a test may call
``send_email(job)``), and it knows its entrypoint's name and payload type. A misspelt handle is
a ``NameError`` or ``ImportError`` when the producer's module loads, where a misspelt string
was a job that waits forever. The payload is checked twice: by a type checker (``enqueue``
takes the ``T`` of the handler's ``Job[T]``), and when enqueueing (an instance of the payload
type is sent as it is, JSON data is validated into it first, and anything else raises
:class:`~pgq_thin.payloads.PayloadValidationError` naming the field) so the job a worker would
refuse is never stored. Enqueueing itself is :meth:`pgq_thin.Queue.enqueue`: the same
``pgq.enqueue`` call, with the same options.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pgq_thin.payloads import PayloadValidationError, validate_payload

if TYPE_CHECKING:
    from pgq_thin.job import Job

# The queue arguments are a pgq_thin.Queue (enqueue*) or AsyncQueue (aenqueue*), typed Any:
# pgq_thin.queue imports this module, and the package has no import cycle.

P = TypeVar("P")
R = TypeVar("R")

__all__ = ["Entrypoint", "entrypoint_name"]


class Entrypoint(Generic[P, R]):
    """A registered handler of one entrypoint: callable as the function, and a producer's
    way to enqueue to it with a payload of the handler's type."""

    def __init__(self, name: str, fn: Callable[[Job[P]], R], payload_type: type | None) -> None:
        self.name = name
        self.fn = fn
        self.payload_type = payload_type
        functools.update_wrapper(self, fn)

    def __call__(self, job: Job[P]) -> R:
        return self.fn(job)

    def __repr__(self) -> str:
        kind = "" if self.payload_type is None else f" of {self.payload_type.__name__}"
        return f"<pgq_thin entrypoint {self.name!r}{kind}>"

    def checked(self, payload: Any) -> Any:
        """``payload`` if it fits the payload type (an instance, or JSON data that validates
        into it), else :class:`~pgq_thin.payloads.PayloadValidationError`."""
        tp = self.payload_type
        if tp is None or isinstance(payload, tp):
            return payload
        if payload is not None and type(payload).__module__ != "builtins":
            raise PayloadValidationError(
                f"entrypoint {self.name!r} takes payloads of type {tp.__name__}, "
                f"got {type(payload).__name__}"
            )
        try:
            validate_payload(tp, payload)
        except PayloadValidationError as err:
            raise PayloadValidationError(f"entrypoint {self.name!r}: {err}") from err
        return payload

    def enqueue(self, queue: Any, payload: P | None = None, **options: Any) -> int:
        """Add one job of this entrypoint through ``queue`` (options as
        :meth:`pgq_thin.Queue.enqueue`: priority, run_at, dedupe_key, headers, on_conflict)."""
        return int(queue.enqueue(self.name, self.checked(payload), **options))

    def enqueue_many(self, queue: Any, payloads: Sequence[P], **options: Any) -> list[int]:
        """Add one job of this entrypoint per payload, in one statement."""
        return list(queue.enqueue_many(self.name, [self.checked(p) for p in payloads], **options))

    async def aenqueue(self, queue: Any, payload: P | None = None, **options: Any) -> int:
        """:meth:`enqueue` through an :class:`~pgq_thin.AsyncQueue`."""
        return int(await queue.enqueue(self.name, self.checked(payload), **options))

    async def aenqueue_many(self, queue: Any, payloads: Sequence[P], **options: Any) -> list[int]:
        """:meth:`enqueue_many` through an :class:`~pgq_thin.AsyncQueue`."""
        ids = await queue.enqueue_many(self.name, [self.checked(p) for p in payloads], **options)
        return list(ids)


def entrypoint_name(entrypoint: str | Entrypoint[Any, Any]) -> str:
    """The name of an entrypoint given as a name or a handle."""
    return entrypoint.name if isinstance(entrypoint, Entrypoint) else entrypoint


def entrypoint_payload(entrypoint: str | Entrypoint[Any, Any], payload: Any) -> Any:
    """The payload to send: checked against a handle's payload type; as given for a name."""
    return entrypoint.checked(payload) if isinstance(entrypoint, Entrypoint) else payload
