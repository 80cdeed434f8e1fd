"""The dashboard under test: a real uvicorn server in a thread, on a free port of 127.0.0.1."""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import httpx
import psycopg
import uvicorn

from helpers.wait import wait_for
from pgq_thin.web import WebConfig, create_app

CHROMIUM = "/usr/bin/chromium"
TOKEN = "test-token-0123456789"
REPO = Path(__file__).resolve().parents[3]
#: Where the README's screenshots go: written when PGQ_UPDATE_GOLDEN=1 (``make golden``),
#: else to the test's own folder (the screenshots are taken either way).
SCREENSHOTS = REPO / "docs" / "images"


def chromium_path() -> str | None:
    if os.access(CHROMIUM, os.X_OK):
        return CHROMIUM
    return shutil.which("chromium")


def screenshot_dir(tmp_path: Path) -> Path:
    if os.environ.get("PGQ_UPDATE_GOLDEN"):
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        return SCREENSHOTS
    return tmp_path


class WebServer:
    """``pgq_thin.web`` served by uvicorn in a daemon thread of the test process."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self.server = uvicorn.Server(
            uvicorn.Config(
                create_app(config), host="127.0.0.1", port=0, log_level="warning", lifespan="on"
            )
        )
        self.thread = threading.Thread(target=self.server.run, name="pgq-web", daemon=True)
        self.url = ""

    def start(self) -> WebServer:
        self.thread.start()
        wait_for(lambda: self.server.started, 20, "the web server to start")
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(20)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, follow_redirects=False, timeout=20)


@contextmanager
def serving(dsn: str, token: str | None = TOKEN, **options: object) -> Iterator[WebServer]:
    config = WebConfig(dsn=dsn, token=token, refresh=0.5, **options)  # type: ignore[arg-type]
    server = WebServer(config).start()
    try:
        yield server
    finally:
        server.stop()


def csrf_of(html: str) -> str:
    """The CSRF token in a page's forms."""
    found = re.search(r'<meta name="csrf" content="([^"]*)">', html)
    assert found, "no form with a CSRF token on the page"
    return found.group(1)


def sign_in(client: httpx.Client, who: str = "alice", token: str = TOKEN) -> str:
    """Sign in through the login form; returns the CSRF token of the session."""
    answer = client.post("/login", data={"who": who, "token": token, "next": "/"})
    assert answer.status_code == 303, answer.text
    return csrf_of(client.get("/").text)


def an_hour_of_history(
    dsn: str, entrypoints: Sequence[str], *, minutes: int = 45, dead: Sequence[str] = ()
) -> dict[str, int]:
    """Jobs of ``entrypoints`` run over the last ``minutes`` minutes, through the SQL API with
    its ``at`` times (each minute: jobs enqueued, claimed and completed in the minute they
    stand for, a few left due for the next one), and the rollup called in each minute, so that
    ``pgq.metrics_series`` has finished counts, a backlog sample and percentiles per minute.
    Entrypoints in ``dead``: every ninth minute one job fails for good (max_attempts 1).
    Leaves no job of them behind; returns how many finished per entrypoint."""
    worker = "c4a2c4a2-0000-4000-8000-000000000001"
    finished = dict.fromkeys(entrypoints, 0)
    with psycopg.connect(dsn, autocommit=True) as conn:
        for name in dead:
            conn.execute("SELECT pgq.configure(%s, max_attempts => 1)", (name,))
        (now,) = conn.execute("SELECT date_trunc('minute', now())").fetchone()  # type: ignore[misc]
        for k in range(minutes, 0, -1):
            t = now - timedelta(minutes=k)
            for e, entrypoint in enumerate(entrypoints):
                n = 4 + (k * 7 + e * 3) % 11
                ids = [
                    row[0]
                    for row in conn.execute(
                        "SELECT pgq.enqueue(%s) FROM generate_series(1, %s)", (entrypoint, n)
                    ).fetchall()
                ]
                conn.execute(
                    "UPDATE pgq.jobs SET enqueued_at = %s, run_at = %s WHERE id = ANY(%s)",
                    (t, t, ids),
                )
                take = n + (k * 3 + e) % 5 - 2  # the backlog walks up and down, drains at k 1
                claimed = conn.execute(
                    "SELECT id, lease FROM pgq.claim(%s, ARRAY[%s], %s, %s)",
                    (worker, entrypoint, take if k > 1 else 10000, t + timedelta(seconds=1)),
                ).fetchall()
                for i, (job_id, lease) in enumerate(claimed):
                    fails = entrypoint in dead and k % 9 == 0 and i == 0
                    status = "failed" if fails else "successful"
                    run = 0.05 * (1 + (i * 13 + k) % 9) * (3 if k % 10 == 0 else 1)
                    conn.execute(
                        "SELECT pgq.complete(%s, ARRAY[%s::bigint], ARRAY[%s::bigint], ARRAY[%s],"
                        " NULL, %s)",
                        (worker, job_id, lease, status, t + timedelta(seconds=2 + run)),
                    )
                    finished[entrypoint] += 1
            sample_at = t + timedelta(seconds=30)
            conn.execute("SELECT rolled FROM pgq.rollup_metrics(at => %s)", (sample_at,))
    return finished
