"""What waits on a rate or key limit, as top, status and the web page show it: the columns
``pgq.metrics`` reports (rate_remaining, rate_wait_s, rate_keys_used_up, keys_at_limit,
key_limited), rendered by each reader; an entrypoint without limits shows nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import timedelta

import psycopg
from helpers.web import serving

from pgq_thin import Admin, Queue
from pgq_thin.cli._output import limits_text

WORKER = "7b7b0000-0000-4000-8000-000000000001"


def limited_queue(dsn: str) -> None:
    """fv.rate: 2 starts per hour, used up, one job due; fv.keys: one running job per key, two
    keys at it, one job waiting; fv.free: no limit."""
    with Admin(dsn) as admin, Queue(dsn) as queue:
        admin.configure("fv.rate", rate_limit=2, rate_period=timedelta(hours=1))
        admin.configure("fv.keys", key_concurrency_limit=1)
        queue.enqueue_many("fv.rate", [{}] * 3)
        queue.enqueue_many("fv.keys", [{}] * 3, group_keys=["a", "a", "b"])
        queue.enqueue("fv.free")
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute("SELECT pgq.claim(%s, '{fv.rate,fv.keys}', 10)", (WORKER,))


def cli(dsn: str, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "pgq_thin", *args, "--dsn", dsn],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "260"},
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_limits_text_reads_the_flow_columns(pgq_dsn: str) -> None:
    limited_queue(pgq_dsn)
    with Admin(pgq_dsn) as admin:
        m = {r.entrypoint: r for r in admin.metrics()}
    rate = limits_text(m["fv.rate"])
    assert rate.startswith("rate used up, next ") and rate.endswith(("m", "s"))
    assert limits_text(m["fv.keys"]) == "2 keys at limit, 1 waiting"
    assert limits_text(m["fv.free"]) == ""


def test_top_and_status_show_what_waits_on_a_limit(pgq_dsn: str) -> None:
    limited_queue(pgq_dsn)
    screen = cli(pgq_dsn, "top", "--once")
    line = next(x for x in screen.splitlines() if x.split()[:1] == ["fv.keys"])
    assert "2 keys at limit, 1 waiting" in line
    line = next(x for x in screen.splitlines() if x.split()[:1] == ["fv.rate"])
    assert "rate used up, next 59m" in line or "rate used up, next 1h00m" in line
    status = {r["entrypoint"]: r for r in json.loads(cli(pgq_dsn, "status", "--json"))}
    assert status["fv.keys"]["limits"] == "2 keys at limit, 1 waiting"
    assert status["fv.rate"]["limits"].startswith("rate used up")
    assert status["fv.free"]["limits"] is None


def test_the_web_page_shows_what_waits_on_a_limit(pgq_dsn: str) -> None:
    limited_queue(pgq_dsn)
    with serving(pgq_dsn, token=None) as server, server.client() as client:
        overview = client.get("/").text
        rate_page = client.get("/entrypoint?name=fv.rate").text
        keys_page = client.get("/entrypoint?name=fv.keys").text
        free_page = client.get("/entrypoint?name=fv.free").text
    assert 'class="badge limited"' in overview
    assert "2 keys at limit, 1 waiting" in overview
    assert "rate limited" in overview
    assert 'id="ep-rate">used up: next start in' in rate_page
    assert 'id="ep-keys">2 (1 jobs waiting)' in keys_page
    assert 'id="ep-rate"' not in free_page and 'id="ep-keys"' not in free_page
