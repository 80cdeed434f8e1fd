"""Heartbeats are HOT updates: heartbeat_at is in no index and pages keep room for new versions."""

from __future__ import annotations

from benchmarks.hot_heartbeats import measure


def test_heartbeat_updates_are_hot(pgq_dsn: str) -> None:
    updates, hot = measure(pgq_dsn, jobs=500, rounds=6)
    assert updates == 3000
    assert hot / updates >= 0.9, f"only {hot} of {updates} heartbeat updates were HOT"
