"""Heartbeats are HOT updates: heartbeat_at is in no index and pages keep room for new versions.

A transaction open anywhere in the cluster while the heartbeats run (another test suite, a
benchmark) holds back the cleanup horizon, so no page can be pruned and HOT updates run out of
room: that is a property of PostgreSQL, not of the schema. The test therefore measures again
when another session held a transaction open during a measurement, and skips (saying so) only if
every attempt was disturbed.
"""

from __future__ import annotations

import psycopg
import pytest

from benchmarks.hot_heartbeats import measure

OTHERS_IN_TRANSACTION = (
    "SELECT count(*) FROM pg_stat_activity"
    " WHERE pid <> pg_backend_pid() AND (backend_xid IS NOT NULL OR backend_xmin IS NOT NULL)"
    " AND state <> 'idle'"
)


def _others(dsn: str) -> int:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(OTHERS_IN_TRANSACTION).fetchone()
    return int(row[0]) if row else 0


@pytest.mark.may_skip(reason="other sessions of a shared server can disturb every measurement")
def test_heartbeat_updates_are_hot(pgq_dsn: str) -> None:
    results = []
    for _ in range(5):
        before = _others(pgq_dsn)
        updates, hot = measure(pgq_dsn, jobs=500, rounds=6)
        disturbed = before + _others(pgq_dsn) > 0
        assert updates == 3000
        results.append((hot, disturbed))
        if not disturbed:
            assert hot / updates >= 0.9, f"only {hot} of {updates} heartbeat updates were HOT"
            return
    pytest.skip(f"other sessions held transactions open during every measurement: {results}")
