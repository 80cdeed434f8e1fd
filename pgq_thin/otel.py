"""OpenTelemetry (the extra ``otel``): a trace goes on from the code that enqueued a job to the
handler that runs it.

- ``Queue.enqueue`` / ``enqueue_many`` (sync and async) put the current trace context in the
  job's headers (W3C ``traceparent``, and ``tracestate``/``baggage`` when there are any) when a
  span is active; headers the caller set are never overwritten (a ``traceparent`` given by the
  caller is kept with its own ``tracestate``).
- The worker runs each job in a ``CONSUMER`` span named ``process <entrypoint>`` that continues
  the producer's trace (its context is the parent, and a link), with the attributes of the
  messaging semantic conventions (``messaging.system`` ``pgq``, ``messaging.operation.type``
  ``process``, ``messaging.destination.name`` the entrypoint, ``messaging.message.id`` the job
  id, ``messaging.client.id`` the worker id) and ``pgq.job.attempt``, ``pgq.job.outcome``. A
  failure is recorded on the span (the exception, status ERROR). The span is the current one
  while the handler runs (also in a sync handler's thread), so its own spans nest under it.

Nothing of OpenTelemetry is imported unless the application imported it first: it must, to set
up a tracer provider, and without one there is nothing to record. :func:`in_use` is that test
(a dictionary lookup); this module imports ``opentelemetry`` only inside its functions.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from pgq_thin._version import __version__

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from pgq_thin.job import Job

__all__ = ["TRACE_HEADERS", "JobTracer", "in_use", "with_trace_context"]

#: The module whose presence means the application uses OpenTelemetry.
MODULE = "opentelemetry.trace"
#: The headers a job's trace context travels in (W3C Trace Context, W3C Baggage).
TRACE_HEADERS = ("traceparent", "tracestate", "baggage")
#: Outcomes recorded as an error on the span.
ERRORS = frozenset({"failed", "invalid_payload", "aborted", "undecodable"})


def in_use() -> bool:
    """The application imported OpenTelemetry (so a tracer provider may be set up)."""
    return MODULE in sys.modules


def with_trace_context(headers: dict[str, Any] | None) -> dict[str, Any] | None:
    """``headers`` with the current trace context added, when a span is active (a new dict;
    the caller's is not changed). A ``traceparent`` the caller set is kept, with whatever
    else it set; keys it set are never overwritten."""
    if MODULE not in sys.modules:
        return headers
    from opentelemetry import propagate

    carrier: dict[str, str] = {}
    propagate.inject(carrier)
    if not carrier or (headers is not None and "traceparent" in headers):
        return headers
    return {**carrier, **headers} if headers else carrier


def _carrier(headers: Mapping[str, Any] | None) -> dict[str, str]:
    """The trace headers of a job that are text (anything else in headers is not ours)."""
    if not headers:
        return {}
    return {k: v for k in TRACE_HEADERS if isinstance(v := headers.get(k), str)}


class JobTracer:
    """Starts and ends the span of each job a worker runs (see the module docstring)."""

    def __init__(self, worker_id: object) -> None:
        from opentelemetry import propagate, trace

        self._trace = trace
        self._propagate = propagate
        self._tracer = trace.get_tracer("pgq_thin", __version__)
        self._worker_id = str(worker_id)

    def start(self, job: Job[Any]) -> Span:
        trace = self._trace
        links = []
        parent = None
        carrier = _carrier(job.headers)
        if carrier:
            try:
                parent = self._propagate.extract(carrier)
            except Exception:  # a header that only looks like ours: no parent
                parent = None
            if parent is not None:
                producer = trace.get_current_span(parent).get_span_context()
                if producer.is_valid:
                    links.append(trace.Link(producer))
                else:
                    parent = None
        return self._tracer.start_span(
            f"process {job.entrypoint}",
            context=parent if parent is not None else _root(),
            kind=trace.SpanKind.CONSUMER,
            links=links,
            attributes={
                "messaging.system": "pgq",
                "messaging.operation.type": "process",
                "messaging.operation.name": "process",
                "messaging.destination.name": job.entrypoint,
                "messaging.message.id": str(job.id),
                "messaging.client.id": self._worker_id,
                "pgq.job.attempt": job.attempt,
                "pgq.job.max_attempts": job.max_attempts,
            },
        )

    @contextmanager
    def current(self, span: Span) -> Iterator[None]:
        """``span`` is the current span inside the block (it is not ended here)."""
        with self._trace.use_span(
            span, end_on_exit=False, record_exception=False, set_status_on_exception=False
        ):
            yield

    def end(self, span: Span, outcome: str, error: BaseException | None) -> None:
        span.set_attribute("pgq.job.outcome", outcome)
        if outcome in ERRORS:
            if error is not None:
                span.record_exception(error)
                span.set_attribute("error.type", type(error).__qualname__)
            else:
                span.set_attribute("error.type", outcome)
            status = self._trace.Status(self._trace.StatusCode.ERROR, outcome)
            span.set_status(status)
        span.end()


def _root() -> Any:
    """An empty context: a job without a producer's context starts a trace of its own (never a
    child of whatever span the worker itself was started in)."""
    from opentelemetry.context import Context

    return Context()
