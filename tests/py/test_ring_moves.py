"""Calls by id that wait on a row the ring's maintenance carries to another slot.

Maintenance moves a straggler between partitions of pgq.jobs as DELETE ... RETURNING + INSERT of
the same row (same id, lease, ready number). A call that waited on the row lock then finds the
row deleted under it; heartbeat, complete, release and cancel look once more, in a new
statement, and must still accept the job in its new slot. Session A holds the row lock and
does the move; session B's call waits on it (seen in pg_stat_activity, never a timer).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from helpers.wait import wait_for

WORKER = uuid.UUID("11111111-1111-1111-1111-111111111111")

# The same row in another slot of the ring, as pgq.maintain carries it.
MOVE = """
WITH m AS (DELETE FROM pgq.jobs WHERE id = %(id)s RETURNING *)
INSERT INTO pgq.jobs
SELECT (jsonb_populate_record(NULL::pgq.jobs,
                              to_jsonb(m) || jsonb_build_object('slot', %(slot)s))).*
  FROM m
"""


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def running_job(
    conn: psycopg.Connection[Any], entrypoint: str, lease_off: int = 0
) -> tuple[int, int]:
    """A running job of WORKER inserted directly (claim is not what is under test): (id, lease).
    Its lease names its slot as a claim's does (lease mod 4); lease_off > 0 names another slot,
    as for a job carried since its claim."""
    row = conn.execute(
        """INSERT INTO pgq.jobs (entrypoint, status, attempt, lease, worker_id, started_at,
                                 heartbeat_at, ready_seq, dedupe_key)
           VALUES (%s, 'running', 1, nextval('pgq.lease_seq') * 4 + (pgq._slot() + %s) %% 4,
                   %s, now(), now(), nextval('pgq.ready_seq'), %s)
           RETURNING id, lease""",
        (entrypoint, lease_off, WORKER, f"{entrypoint}-key"),
    ).fetchone()
    assert row is not None
    conn.execute(
        "INSERT INTO pgq.live_keys (dedupe_key, job_id) VALUES (%s, %s)",
        (f"{entrypoint}-key", row[0]),
    )
    return row[0], row[1]


def queued_job(conn: psycopg.Connection[Any], entrypoint: str) -> int:
    row = conn.execute(
        """INSERT INTO pgq.jobs (entrypoint, status, ready_seq)
           VALUES (%s, 'queued', nextval('pgq.ready_seq'))
           RETURNING id""",
        (entrypoint,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def slot_of(conn: psycopg.Connection[Any], job_id: int) -> int:
    row = conn.execute("SELECT slot FROM pgq.jobs WHERE id = %s", (job_id,)).fetchone()
    assert row is not None, f"job {job_id} is not in pgq.jobs"
    return int(row[0])


def call_while_carried(
    dsn: str, job_id: int, call: Callable[[psycopg.Connection[Any]], Any]
) -> Any:
    """Run call(conn_b) while session A holds job_id's row lock; once B waits on it, A carries
    the row to another ring slot and commits. Returns what the call returned."""
    with connect(dsn) as a, connect(dsn) as b:
        b_pid = b.info.backend_pid
        result: list[Any] = []
        errors: list[BaseException] = []

        def run_b() -> None:
            try:
                result.append(call(b))
            except BaseException as exc:  # pragma: no cover - re-raised below
                errors.append(exc)

        with a.transaction():
            old = slot_of(a, job_id)
            a.execute("SELECT 1 FROM pgq.jobs WHERE id = %s FOR UPDATE", (job_id,))
            thread = threading.Thread(target=run_b)
            thread.start()
            wait_for(
                lambda: a.execute(
                    "SELECT 1 FROM pg_stat_activity WHERE pid = %s AND wait_event_type = 'Lock'",
                    (b_pid,),
                ).fetchone(),
                what="session B to wait on the row lock",
            )
            a.execute(MOVE, {"id": job_id, "slot": (old + 1) % 4})
        thread.join(timeout=60)
        assert not thread.is_alive(), "session B did not finish"
        if errors:
            raise errors[0]
        return result[0]


def test_heartbeat_finds_a_job_carried_while_it_waited(pgq_dsn: str) -> None:
    with connect(pgq_dsn) as conn:
        job_id, lease = running_job(conn, "rm_beat")
        old = slot_of(conn, job_id)
        rows = call_while_carried(
            pgq_dsn,
            job_id,
            lambda b: b.execute(
                "SELECT id, state FROM pgq.heartbeat(%s, %s, %s, now() + interval '7 seconds')",
                (WORKER, [job_id], [lease]),
            ).fetchall(),
        )
        assert rows == [(job_id, "ok")]
        assert slot_of(conn, job_id) == (old + 1) % 4
        beat = conn.execute(
            "SELECT heartbeat_at - started_at FROM pgq.jobs WHERE id = %s", (job_id,)
        ).fetchone()
        assert beat is not None and beat[0].total_seconds() >= 7


@pytest.mark.parametrize(
    ("outcome", "status", "where"),
    [
        ("successful", "successful", "history"),
        ("canceled", "canceled", "history"),
        ("failed", "retry", "scheduled"),
        ("interrupted", "retry", "queued"),
    ],
)
# The lease names the slot the job is in (its first look waits and misses, the next finds it),
# or another (carried since its claim: the look by slot misses, the next waits and misses, the
# third finds it).
@pytest.mark.parametrize("lease_off", [0, 2], ids=["lease-names-its-slot", "carried-before"])
def test_complete_finds_a_job_carried_while_it_waited(
    pgq_dsn: str, outcome: str, status: str, where: str, lease_off: int
) -> None:
    with connect(pgq_dsn) as conn:
        job_id, lease = running_job(conn, f"rm_done_{outcome}", lease_off)
        rows = call_while_carried(
            pgq_dsn,
            job_id,
            lambda b: b.execute(
                "SELECT id, status FROM pgq.complete(%s, %s, %s, %s)",
                (WORKER, [job_id], [lease], [outcome]),
            ).fetchall(),
        )
        assert rows == [(job_id, status)]
        live = conn.execute("SELECT status, slot FROM pgq.jobs WHERE id = %s", (job_id,)).fetchall()
        if where == "history":
            assert live == []
            hist = conn.execute(
                "SELECT status, lease FROM pgq.job_history WHERE id = %s", (job_id,)
            ).fetchall()
            assert hist == [(status, lease)]
            # The dedupe key is free again.
            assert conn.execute(
                "SELECT count(*) FROM pgq.live_keys WHERE job_id = %s", (job_id,)
            ).fetchone() == (0,)
        elif where == "scheduled":
            assert live == [("scheduled", 4)]
        else:
            assert len(live) == 1 and live[0][0] == "queued" and live[0][1] != 4
        # Repeating the call (its answer lost) answers the same and changes nothing.
        again = conn.execute(
            "SELECT id, status FROM pgq.complete(%s, %s, %s, %s)",
            (WORKER, [job_id], [lease], [outcome]),
        ).fetchall()
        assert again == rows


def test_release_finds_a_job_carried_while_it_waited(pgq_dsn: str) -> None:
    with connect(pgq_dsn) as conn:
        job_id, lease = running_job(conn, "rm_release")
        rows = call_while_carried(
            pgq_dsn,
            job_id,
            lambda b: b.execute(
                "SELECT id, status FROM pgq.release(%s, %s, %s)", (WORKER, [job_id], [lease])
            ).fetchall(),
        )
        assert rows == [(job_id, "queued")]
        assert conn.execute(
            "SELECT status, attempt, lease FROM pgq.jobs WHERE id = %s", (job_id,)
        ).fetchall() == [("queued", 0, None)]


@pytest.mark.parametrize("state", ["queued", "running"])
def test_cancel_finds_a_job_carried_while_it_waited(pgq_dsn: str, state: str) -> None:
    with connect(pgq_dsn) as conn:
        if state == "queued":
            job_id = queued_job(conn, "rm_cancel_q")
        else:
            job_id, _ = running_job(conn, "rm_cancel_r")
        rows = call_while_carried(
            pgq_dsn,
            job_id,
            lambda b: b.execute("SELECT id FROM pgq.cancel(%s)", ([job_id],)).fetchall(),
        )
        assert rows == [(job_id,)]
        if state == "queued":
            assert conn.execute(
                "SELECT status FROM pgq.job_history WHERE id = %s", (job_id,)
            ).fetchall() == [("canceled",)]
        else:
            assert conn.execute(
                "SELECT cancel_requested FROM pgq.jobs WHERE id = %s", (job_id,)
            ).fetchall() == [(True,)]


def test_a_stale_lease_is_still_lost_after_a_move(pgq_dsn: str) -> None:
    """The second look finds a carried row only under the lease that owns it."""
    with connect(pgq_dsn) as conn:
        job_id, lease = running_job(conn, "rm_stale")
        conn.execute(MOVE, {"id": job_id, "slot": (slot_of(conn, job_id) + 1) % 4})
        rows = conn.execute(
            "SELECT id, state FROM pgq.heartbeat(%s, %s, %s)", (WORKER, [job_id], [lease + 1000])
        ).fetchall()
        assert rows == [(job_id, "lost")]
        for call in ("complete(%s, %s, %s, '{successful}')", "release(%s, %s, %s)"):
            done = conn.execute(
                f"SELECT count(*) FROM pgq.{call}", (WORKER, [job_id], [lease + 1000])
            ).fetchone()
            assert done == (0,), call
        assert conn.execute("SELECT status FROM pgq.jobs WHERE id = %s", (job_id,)).fetchall() == [
            ("running",)
        ]
        rows = conn.execute(
            "SELECT id, state FROM pgq.heartbeat(%s, %s, %s)", (WORKER, [job_id], [lease])
        ).fetchall()
        assert rows == [(job_id, "ok")]


def test_a_replayed_claim_finds_its_job_carried_while_it_waited(pgq_dsn: str) -> None:
    """A claim sent again (its answer lost) answers its own job even while maintenance carries
    it, and never falls through to claiming a new job under a new lease."""
    request = uuid.UUID("22222222-2222-2222-2222-222222222222")
    with connect(pgq_dsn) as conn:
        first = conn.execute("SELECT pgq.enqueue('rm_replay')").fetchone()
        other = conn.execute("SELECT pgq.enqueue('rm_replay')").fetchone()
        assert first is not None and other is not None
        claimed = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, '{rm_replay}', 1, NULL, %s)", (WORKER, request)
        ).fetchall()
        assert claimed == [(first[0], claimed[0][1])]
        rows = call_while_carried(
            pgq_dsn,
            first[0],
            lambda b: b.execute(
                "SELECT id, lease FROM pgq.claim(%s, '{rm_replay}', 1, NULL, %s)",
                (WORKER, request),
            ).fetchall(),
        )
        assert rows == claimed
        assert conn.execute(
            "SELECT status, lease FROM pgq.jobs WHERE id = %s", (first[0],)
        ).fetchall() == [("running", claimed[0][1])]
        assert conn.execute(
            "SELECT status FROM pgq.jobs WHERE id = %s", (other[0],)
        ).fetchall() == [("queued",)]
