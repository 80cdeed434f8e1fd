"""Typed payloads round-trip: nested dataclasses, datetime, date, UUID, Decimal, enum,
Optional, list and dict fields, encoded on enqueue and decoded in the worker, with pydantic
(TypeAdapter) and without it (the built-in converter)."""

from __future__ import annotations

import enum
import json
import os
import subprocess
import sys
import textwrap
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any, Optional

import psycopg
import pytest

from pgq_thin.job import Job
from pgq_thin.payloads import (
    PayloadValidationError,
    codec,
    encode_payload,
    pydantic_available,
    validate_payload,
)
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

REPO = Path(__file__).resolve().parents[2]


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


@dataclass
class Address:
    city: str
    zip: str | None = None


@dataclass
class Shipment:
    order: int
    address: Address
    when: datetime
    day: date
    ref: uuid.UUID
    amount: Decimal
    colour: Colour
    weight: float = 1.0
    fragile: bool = False
    tags: list[str] = field(default_factory=list)
    stops: list[Address] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    note: Optional[str] = None  # noqa: UP045 - the typing spelling is supported too
    extra: Any = None


def shipment() -> Shipment:
    return Shipment(
        order=7,
        address=Address("Berlin", "10115"),
        when=datetime(2026, 11, 30, 8, 15, tzinfo=UTC),
        day=date(2026, 12, 1),
        ref=uuid.UUID("6f1c2d9e-0000-4000-8000-000000000001"),
        amount=Decimal("19.90"),
        colour=Colour.BLUE,
        weight=2.5,
        tags=["a", "b"],
        stops=[Address("Hamburg")],
        counts={"boxes": 2},
        extra={"free": ["json"]},
    )


NO_PYDANTIC = pytest.mark.skipif(not pydantic_available(), reason="pydantic not installed")
CODECS = ["builtin", pytest.param("pydantic", marks=NO_PYDANTIC)]


def converter(kind: str) -> Any:
    return codec(Shipment, use_pydantic=kind == "pydantic")


@pytest.mark.parametrize("kind", CODECS)
def test_round_trip(kind: str) -> None:
    conv = converter(kind)
    data = conv.encode(shipment())
    text = json.dumps(data)  # plain JSON: what enqueue stores
    assert data["when"].startswith("2026-11-30T08:15") and data["colour"] == "blue"
    assert data["address"] == {"city": "Berlin", "zip": "10115"} and data["amount"] == "19.90"
    assert conv.decode(json.loads(text)) == shipment()


@pytest.mark.parametrize("kind", CODECS)
@pytest.mark.parametrize(
    ("change", "needles"),
    [
        ({"address": {"city": 5}}, ["address", "city"]),
        ({"tags": ["a", 1]}, ["tags", "1"]),
        ({"address": {"city": "x", "street": "y"}}, ["address", "street"]),
        ({"stops": [{"zip": "1"}]}, ["stops", "city"]),
        ({"when": "yesterday"}, ["when"]),
        ({"colour": "green"}, ["colour"]),
        ({"ref": "not-a-uuid"}, ["ref"]),
        ({"counts": {"boxes": "two"}}, ["counts", "boxes"]),
        ({"surprise": 1}, ["surprise"]),
    ],
)
def test_decode_names_the_bad_field(kind: str, change: dict[str, Any], needles: list[str]) -> None:
    data = {**converter(kind).encode(shipment()), **change}
    with pytest.raises(PayloadValidationError) as info:
        converter(kind).decode(data)
    message = str(info.value)
    assert "\n" not in message
    for needle in needles:
        assert needle in message, message


@pytest.mark.parametrize("kind", CODECS)
def test_missing_field_and_not_an_object(kind: str) -> None:
    data = converter(kind).encode(shipment())
    del data["order"]
    with pytest.raises(PayloadValidationError, match="order"):
        converter(kind).decode(data)
    with pytest.raises(PayloadValidationError):
        converter(kind).decode([1, 2])


@pytest.mark.parametrize("kind", CODECS)
def test_encode_refuses_a_value_that_does_not_fit(kind: str) -> None:
    bad = shipment()
    bad.when = "yesterday"  # type: ignore[assignment]
    with pytest.raises(PayloadValidationError):
        converter(kind).encode(bad)


def test_builtin_is_exact_about_json_types() -> None:
    data = converter("builtin").encode(shipment())
    for change in ({"order": "7"}, {"order": True}, {"fragile": 1}, {"day": "2026-12-01T10:00"}):
        with pytest.raises(PayloadValidationError):
            converter("builtin").decode({**data, **change})
    assert converter("builtin").decode({**data, "amount": 3}).amount == Decimal(3)
    assert converter("builtin").decode({**data, "weight": 2}).weight == 2.0


@dataclass
class WithInterval:
    every: timedelta


@dataclass
class WithUnion:
    value: int | str


@dataclass
class Nested:
    inner: WithInterval


@pytest.mark.parametrize("tp", [WithInterval, WithUnion, Nested])
def test_builtin_refuses_unsupported_field_types(tp: type) -> None:
    with pytest.raises(TypeError, match="is not supported without pydantic"):
        codec(tp, use_pydantic=False)


class Opaque:
    pass


@dataclass
class WithOpaque:
    thing: Opaque


def test_registration_refuses_a_type_that_cannot_be_converted() -> None:
    worker = ThinWorker("")
    with pytest.raises(TypeError, match="WithOpaque"):

        @worker.entrypoint("opaque")
        def handler(job: Job[WithOpaque]) -> None: ...

    with pytest.raises(TypeError, match="WithOpaque"):
        worker.entrypoint("opaque2", payload_type=WithOpaque)


def test_enqueue_encodes_and_the_worker_decodes(pgq_dsn: str) -> None:
    got: list[Shipment] = []
    worker = ThinWorker(pgq_dsn)

    @worker.entrypoint("ship")
    def ship(job: Job[Shipment]) -> None:
        got.append(job.payload)

    with Queue(pgq_dsn) as queue:
        job_id = queue.enqueue("ship", shipment())
    with psycopg.connect(pgq_dsn) as conn:
        row = conn.execute("SELECT payload FROM pgq.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None and row[0]["address"] == {"city": "Berlin", "zip": "10115"}
    worker.run(until_empty=True)
    assert got == [shipment()]
    assert encode_payload({"plain": 1}) == {"plain": 1}
    assert validate_payload(Address, {"city": "x"}) == Address("x")


WITHOUT_PYDANTIC = """
import sys
sys.modules["pydantic"] = None  # import pydantic now fails, as when it is not installed
sys.path.insert(0, {tests!r})
from datetime import timedelta
from dataclasses import dataclass
import test_payloads as t
from pgq_thin.job import Job
from pgq_thin.payloads import PayloadValidationError, pydantic_available
from pgq_thin.admin import Admin
from pgq_thin.queue import Queue
from pgq_thin.worker import ThinWorker

assert not pydantic_available()
worker = ThinWorker({dsn!r})
got = []

@worker.entrypoint("ship")
def ship(job: Job[t.Shipment]) -> None:
    got.append(job.payload)

try:
    @worker.entrypoint("interval")
    def interval(job: Job[t.WithInterval]) -> None: ...
except TypeError as err:
    refused = str(err)
else:
    raise AssertionError("an unsupported field type was accepted")
assert "WithInterval.every: timedelta is not supported without pydantic" in refused, refused

with Queue({dsn!r}) as queue:
    Admin(queue.connection).configure("ship", max_attempts=1)
    queue.enqueue("ship", t.shipment())
    queue.enqueue("ship", {{"order": 1}})
worker.run(until_empty=True)
assert got == [t.shipment()], got
print("ok")
"""


def test_without_pydantic_the_builtin_converter_round_trips(pgq_dsn: str) -> None:
    script = WITHOUT_PYDANTIC.format(tests=str(Path(__file__).parent), dsn=pgq_dsn)
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"
    with psycopg.connect(pgq_dsn) as conn:
        rows = conn.execute(
            "SELECT status, details->>'error', details->>'message' FROM pgq.job_history ORDER BY id"
        ).fetchall()
    assert rows[0][0] == "successful"
    assert rows[1][:2] == ("failed", "PayloadValidationError")
    assert "misses required field(s): address" in rows[1][2]
