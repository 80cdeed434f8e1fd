"""NOTIFY delivery (after commit, data-free) and least-privilege roles, against a real server."""

from __future__ import annotations

import json
import uuid
from typing import Any

import psycopg
import pytest
from psycopg.types.json import Jsonb


def connect(dsn: str) -> psycopg.Connection[Any]:
    return psycopg.connect(dsn, autocommit=True)


def listener(dsn: str) -> psycopg.Connection[Any]:
    conn = connect(dsn)
    conn.execute("LISTEN pgq_events")
    return conn


def events(conn: psycopg.Connection[Any], timeout: float) -> list[dict[str, Any]]:
    """Notifications that arrive within timeout (a bound on waiting, not a synchronisation)."""
    return [json.loads(n.payload) for n in conn.notifies(timeout=timeout)]


def first_event(conn: psycopg.Connection[Any]) -> dict[str, Any]:
    got = [json.loads(n.payload) for n in conn.notifies(timeout=10, stop_after=1)]
    assert got, "no notification within 10 s"
    return got[0]


def test_enqueue_notifies_after_commit_only(pgq_dsn: str) -> None:
    with listener(pgq_dsn) as listen, psycopg.connect(pgq_dsn) as producer:
        producer.execute("SELECT pgq.enqueue('mail', %s)", (Jsonb({"secret": "s3cr3t"}),))
        assert events(listen, 0.3) == []
        producer.commit()
        event = first_event(listen)
    assert event == {"kind": "enqueued", "entrypoints": ["mail"]}
    assert "s3cr3t" not in json.dumps(event)


def test_rolled_back_enqueue_notifies_nobody(pgq_dsn: str) -> None:
    with listener(pgq_dsn) as listen, psycopg.connect(pgq_dsn) as producer:
        producer.execute("SELECT pgq.enqueue('mail')")
        producer.rollback()
        producer.execute("SELECT pgq.enqueue('after')")
        producer.commit()
        assert first_event(listen) == {"kind": "enqueued", "entrypoints": ["after"]}


def test_one_notification_per_statement(pgq_dsn: str) -> None:
    with listener(pgq_dsn) as listen, connect(pgq_dsn) as producer:
        producer.execute("SELECT pgq.enqueue_many(ARRAY['a', 'b', 'a', 'b', 'a'])").fetchall()
        got = events(listen, 0.5)
    assert len(got) == 1
    assert got[0]["kind"] == "enqueued"
    assert sorted(got[0]["entrypoints"]) == ["a", "b"]


def test_retry_release_and_cancel_notify(pgq_dsn: str) -> None:
    worker = uuid.uuid4()
    with connect(pgq_dsn) as conn:
        conn.execute(
            "SELECT pgq.configure('r', backoff_base => '0 seconds', backoff_max => '0 seconds')"
        )
        ids = [r[0] for r in conn.execute("SELECT pgq.enqueue_many(ARRAY['r', 'r', 'r'])")]
        claimed = conn.execute(
            "SELECT id, lease FROM pgq.claim(%s, ARRAY['r'], 3) ORDER BY id", (worker,)
        ).fetchall()
        with listener(pgq_dsn) as listen:
            conn.execute(
                "SELECT pgq.complete(%s, %s, %s, ARRAY['failed'])",
                (worker, [claimed[0][0]], [claimed[0][1]]),
            )
            assert first_event(listen) == {"kind": "enqueued", "entrypoints": ["r"]}
            conn.execute(
                "SELECT pgq.release(%s, %s, %s)", (worker, [claimed[1][0]], [claimed[1][1]])
            )
            assert first_event(listen) == {"kind": "enqueued", "entrypoints": ["r"]}
            conn.execute("SELECT pgq.cancel(%s)", ([claimed[2][0]],))
            assert first_event(listen) == {"kind": "cancel", "ids": [ids[2]]}
            # Heartbeats and claims send nothing.
            conn.execute(
                "SELECT pgq.heartbeat(%s, %s, %s)", (worker, [claimed[2][0]], [claimed[2][1]])
            )
            conn.execute("SELECT pgq.claim(%s, ARRAY['r'], 3)", (worker,))
            assert events(listen, 0.3) == []


def test_big_cancel_is_chunked_under_the_payload_limit(pgq_dsn: str) -> None:
    worker = uuid.uuid4()
    with connect(pgq_dsn) as conn, listener(pgq_dsn) as listen:
        conn.execute("SELECT pgq.enqueue_many(array_fill('big'::text, ARRAY[1000]))")
        conn.execute("SELECT pgq.claim(%s, ARRAY['big'], 1000)", (worker,))
        assert events(listen, 0.5) == [{"kind": "enqueued", "entrypoints": ["big"]}]
        flagged = conn.execute(
            "SELECT pgq.cancel((SELECT array_agg(id) FROM pgq.jobs WHERE entrypoint = 'big'))"
        ).fetchall()
        assert len(flagged) == 1000
        got = [json.loads(n.payload) for n in listen.notifies(timeout=10, stop_after=4)]
    assert all(e["kind"] == "cancel" for e in got)
    assert sorted(i for e in got for i in e["ids"]) == sorted(r[0] for r in flagged)


@pytest.fixture
def as_role(pgq_dsn: str) -> Any:
    """Run statements as a role (SET ROLE from the superuser test connection)."""

    def run(role: str, sql: str, params: tuple[Any, ...] = ()) -> Any:
        with connect(pgq_dsn) as conn:
            conn.execute(f"SET ROLE {role}")
            return conn.execute(sql, params).fetchall()

    return run


def test_producer_can_enqueue_cancel_and_read_stats(as_role: Any) -> None:
    [(job_id,)] = as_role("pgq_producer", "SELECT pgq.enqueue('p', '{\"x\": 1}')")
    assert as_role("pgq_producer", "SELECT pgq.cancel(ARRAY[%s]::bigint[])", (job_id,)) == [
        (job_id,)
    ]
    stats = as_role("pgq_producer", "SELECT entrypoint FROM pgq.queue_stats")
    assert ("p",) in stats


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM pgq.claim(gen_random_uuid(), ARRAY['p'])",
        "SELECT * FROM pgq.jobs",
        "SELECT * FROM pgq.job_history",
        "SELECT * FROM pgq.entrypoints",
        "SELECT pgq.configure('p', max_attempts => 1)",
        "SELECT pgq.requeue(ARRAY[1]::bigint[])",
        "INSERT INTO pgq.jobs (entrypoint) VALUES ('p')",
    ],
)
def test_producer_cannot_work_or_read_tables(as_role: Any, sql: str) -> None:
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        as_role("pgq_producer", sql)


def test_worker_can_run_jobs_but_not_enqueue(pgq_dsn: str, as_role: Any) -> None:
    with connect(pgq_dsn) as conn:
        conn.execute("SELECT pgq.enqueue('w')")
    worker = uuid.uuid4()
    [(job_id, lease)] = as_role(
        "pgq_worker", "SELECT id, lease FROM pgq.claim(%s, ARRAY['w'])", (worker,)
    )
    assert as_role(
        "pgq_worker", "SELECT state FROM pgq.heartbeat(%s, %s, %s)", (worker, [job_id], [lease])
    ) == [("ok",)]
    assert as_role(
        "pgq_worker",
        "SELECT id FROM pgq.complete(%s, %s, %s, ARRAY['successful'])",
        (worker, [job_id], [lease]),
    ) == [(job_id,)]
    with pytest.raises(psycopg.errors.InsufficientPrivilege):
        as_role("pgq_worker", "SELECT pgq.enqueue('w')")


def test_public_has_nothing(pgq_dsn: str) -> None:
    role = f"pgq_nobody_{uuid.uuid4().hex[:8]}"
    with connect(pgq_dsn) as conn:
        conn.execute(f"CREATE ROLE {role}")
        try:
            conn.execute(f"SET ROLE {role}")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                conn.execute("SELECT pgq.enqueue('x')")
            conn.execute("RESET ROLE")
        finally:
            conn.execute(f"DROP ROLE {role}")
