"""OpenTelemetry across a real enqueue and a real worker: the trace context travels in the
job's headers, the worker's CONSUMER span continues it. Each case runs in a subprocess of its
own, so the tracer provider (global to a process) is set once there and the test process
never imports OpenTelemetry (its workers must stay untraced)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

APP_DIR = Path(__file__).resolve().parent

TRACED = r"""
import asyncio, json, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
trace.set_tracer_provider(provider)
tracer = trace.get_tracer("test")

import psycopg
from pgq_thin.admin import Admin
from pgq_thin.queue import AsyncQueue, Queue
from pgq_thin.worker import ThinWorker

dsn = sys.argv[1]
OWN = "00-0123456789abcdef0123456789abcdef-0123456789abcdef-01"
ids = {}
with Queue(dsn) as q:
    Admin(q.connection).configure("t.fail", max_attempts=1)
    with tracer.start_as_current_span("request"):
        ids["ok"] = q.enqueue("t.ok", {"n": 1})
        ids["sync"] = q.enqueue_many("t.sync", [{}, {}], headers={"tenant": "a"})
        ids["fail"] = q.enqueue("t.fail", None)
        ids["own"] = q.enqueue("t.ok", None, headers={"traceparent": OWN})
    ids["plain"] = q.enqueue("t.ok", None)

async def enqueue_async():
    async with AsyncQueue(dsn) as aq:
        with tracer.start_as_current_span("async request"):
            return await aq.enqueue_many("t.ok", [None], headers=[{"x": 1}])

ids["async"] = asyncio.run(enqueue_async())[0]

worker = ThinWorker(dsn, poll_interval=0.2)

@worker.entrypoint("t.ok")
async def ok(job):
    with tracer.start_as_current_span("inside async"):
        pass

@worker.entrypoint("t.sync")
def sync(job):
    with tracer.start_as_current_span("inside sync"):
        pass

@worker.entrypoint("t.fail")
async def fail(job):
    raise ValueError("boom")

worker.run(until_empty=True)

def hexid(n):
    return None if n is None else format(n, "x")

spans = []
for s in exporter.get_finished_spans():
    spans.append({
        "name": s.name,
        "kind": s.kind.name,
        "trace_id": hexid(s.context.trace_id),
        "span_id": hexid(s.context.span_id),
        "parent": hexid(s.parent.span_id) if s.parent else None,
        "links": [[hexid(l.context.trace_id), hexid(l.context.span_id)] for l in s.links],
        "attributes": dict(s.attributes),
        "status": s.status.status_code.name,
        "events": [[e.name, dict(e.attributes)] for e in s.events],
    })
with psycopg.connect(dsn) as conn:
    headers = dict(conn.execute("SELECT id, headers FROM pgq.job_history").fetchall())
print(json.dumps({"ids": ids, "spans": spans, "headers": headers,
                  "worker_id": str(worker.worker_id)}))
"""

UNTRACED = r"""
import sys
if sys.argv[2] == "absent":
    sys.modules["opentelemetry"] = None  # import opentelemetry now fails, as when absent
import psycopg
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

dsn = sys.argv[1]
with Queue(dsn) as q:
    q.enqueue("t.ok", None)
    q.enqueue_many("t.ok", [None, None], headers=[{"a": 1}, None])
worker = ThinWorker(dsn, poll_interval=0.2)

@worker.entrypoint("t.ok")
async def ok(job):
    pass

worker.run(until_empty=True)
assert worker.stats.successful == 3, worker.stats
loaded = sorted(m for m in sys.modules if m.startswith("opentelemetry") and sys.modules[m])
assert loaded == [], loaded
with psycopg.connect(dsn) as conn:
    rows = conn.execute("SELECT headers FROM pgq.job_history ORDER BY id DESC LIMIT 3").fetchall()
assert [r[0] for r in rows] == [None, {"a": 1}, None][::-1], rows
print("ok")
"""


def run_script(script: str, *args: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=APP_DIR,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_a_trace_goes_on_from_the_enqueue_to_the_handler(pgq_dsn: str) -> None:
    out = json.loads(run_script(TRACED, pgq_dsn))
    ids, spans, wid = out["ids"], out["spans"], out["worker_id"]
    headers = {int(k): v for k, v in out["headers"].items()}
    by_name: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    (request,) = by_name["request"]
    (async_request,) = by_name["async request"]

    def process_span(job_id: int) -> dict[str, Any]:
        (span,) = [
            s
            for s in spans
            if s["name"].startswith("process ")
            and s["attributes"]["messaging.message.id"] == str(job_id)
        ]
        return span

    def traceparent_trace(job_id: int) -> str:
        return str(headers[job_id]["traceparent"].split("-")[1])

    # The producer's context is in the headers of jobs enqueued inside a span, and only there.
    for job_id in [ids["ok"], *ids["sync"], ids["fail"]]:
        assert traceparent_trace(job_id) == request["trace_id"].rjust(32, "0")
        assert headers[job_id]["traceparent"].split("-")[2] == request["span_id"].rjust(16, "0")
    assert headers[ids["sync"][0]]["tenant"] == "a"  # the caller's headers are kept
    assert headers[ids["own"]] == {
        "traceparent": "00-" + "0123456789abcdef" * 2 + "-" + "0123456789abcdef-01"
    }  # never overwritten
    assert headers[ids["plain"]] is None  # no span active: nothing added
    assert traceparent_trace(ids["async"]) == async_request["trace_id"].rjust(32, "0")
    assert headers[ids["async"]]["x"] == 1

    # One CONSUMER span per job, a child of (and linked to) the producer's span.
    for name, job_id in [("ok", ids["ok"]), ("fail", ids["fail"])]:
        span = process_span(job_id)
        assert span["kind"] == "CONSUMER"
        assert (span["trace_id"], span["parent"]) == (request["trace_id"], request["span_id"])
        assert span["links"] == [[request["trace_id"], request["span_id"]]]
        attributes = span["attributes"]
        assert attributes["messaging.system"] == "pgq"
        assert attributes["messaging.operation.type"] == "process"
        assert attributes["messaging.destination.name"] == f"t.{name}"
        assert attributes["messaging.client.id"] == wid
        assert attributes["pgq.job.attempt"] == 1
    assert process_span(ids["ok"])["name"] == "process t.ok"
    assert process_span(ids["ok"])["attributes"]["pgq.job.outcome"] == "successful"
    assert process_span(ids["ok"])["status"] == "UNSET"

    failed = process_span(ids["fail"])
    assert failed["status"] == "ERROR" and failed["attributes"]["pgq.job.outcome"] == "failed"
    ((event, attributes),) = failed["events"]
    assert event == "exception" and attributes["exception.type"] == "ValueError"
    assert attributes["exception.message"] == "boom"

    # The handler's own spans nest under the job's span, in async and sync (thread) handlers.
    (inside_ok,) = [s for s in by_name["inside async"] if s["trace_id"] == request["trace_id"]]
    assert inside_ok["parent"] == process_span(ids["ok"])["span_id"]
    sync_parents = {s["parent"] for s in by_name["inside sync"]}
    assert sync_parents == {process_span(i)["span_id"] for i in ids["sync"]}

    # Without a producer's context the job's span starts a trace of its own.
    plain = process_span(ids["plain"])
    assert plain["parent"] is None and plain["links"] == []
    assert plain["trace_id"] not in {request["trace_id"], async_request["trace_id"]}
    own = process_span(ids["own"])
    assert own["trace_id"] == "123456789abcdef0123456789abcdef"  # the caller's context
    assert process_span(ids["async"])["parent"] == async_request["span_id"]


def test_without_opentelemetry_nothing_of_it_is_imported(pgq_dsn: str) -> None:
    """Not imported by the application: the worker and the queue import nothing of it and
    change nothing; not installed at all: everything works the same."""
    assert run_script(UNTRACED, pgq_dsn, "installed").strip() == "ok"
    assert run_script(UNTRACED, pgq_dsn, "absent").strip() == "ok"
