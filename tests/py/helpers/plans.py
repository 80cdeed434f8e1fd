"""The plans a session's statements ran with, nested ones included (auto_explain, JSON), for
tests that check plans rather than time them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg


@contextmanager
def explained(
    conn: psycopg.Connection[Any], analyze: bool = False
) -> Iterator[list[dict[str, Any]]]:
    """Inside the block, every statement of this session, nested ones (in functions) included,
    adds its plan to the list yielded; with `analyze`, with actual rows."""
    plans: list[dict[str, Any]] = []

    def on_notice(diag: psycopg.errors.Diagnostic) -> None:
        msg = diag.message_primary or ""
        start = msg.find("{")
        if msg.startswith("duration:") and start >= 0:
            plans.append(json.loads(msg[start:]))

    conn.add_notice_handler(on_notice)
    for setting in (
        "LOAD 'auto_explain'",
        "SET auto_explain.log_min_duration = 0",
        "SET auto_explain.log_nested_statements = on",
        "SET auto_explain.log_format = json",
        "SET auto_explain.log_level = notice",
        f"SET auto_explain.log_analyze = {'on' if analyze else 'off'}",
    ):
        conn.execute(setting)
    try:
        yield plans
    finally:
        conn.remove_notice_handler(on_notice)
        if not conn.closed:
            conn.execute("SET auto_explain.log_min_duration = -1")


def plan_nodes(plan: dict[str, Any]) -> list[dict[str, Any]]:
    """A plan's nodes, the top one first."""
    return [plan, *(n for c in plan.get("Plans", []) for n in plan_nodes(c))]
