"""Heartbeats are HOT updates: heartbeat_at is in no index and pages keep room for new versions.

A transaction open anywhere in the cluster while the heartbeats run (another test suite, a
benchmark, a developer's psql) holds back the cleanup horizon, so no page can be pruned and HOT
updates run out of room: that is a property of PostgreSQL, not of the schema. The measurement
therefore runs on a server of its own, which no other session uses, so it never has to skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from helpers import faults

from benchmarks.hot_heartbeats import measure
from pgq_thin import migrate

OTHERS_IN_TRANSACTION = (
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE pid <> pg_backend_pid() AND (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)"
    " AND state <> 'idle'"
)


@pytest.fixture(scope="module")
def private_dsn() -> Iterator[str]:
    reason = faults.why_no_own_server()
    assert reason is None, reason  # the test command provisions the server binaries
    with faults.own_server() as server:
        migrate.upgrade(server.dsn())
        yield server.dsn()


def test_heartbeat_updates_are_hot(private_dsn: str) -> None:
    updates, hot = measure(private_dsn, jobs=500, rounds=6)
    assert updates == 3000
    with psycopg.connect(private_dsn, autocommit=True) as conn:
        row = conn.execute(OTHERS_IN_TRANSACTION).fetchone()
    assert row is not None and row[0] == 0, "nothing else runs on the private server"
    assert hot / updates >= 0.9, f"only {hot} of {updates} heartbeat updates were HOT"
