"""The dashboard under test: a real uvicorn server in a thread, on a free port of 127.0.0.1."""

from __future__ import annotations

import os
import re
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
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
