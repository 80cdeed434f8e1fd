"""The state every request of the dashboard shares: its configuration (:class:`WebConfig`)
and :class:`Web` (the admin pool, the overview cache, the signer, the templates, the recent
actions, and the page renderer), reached from a request with :func:`web_of`."""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request
from starlette.responses import HTMLResponse

from pgq_thin.records import Privileges
from pgq_thin.web.data import AdminPool, OverviewCache, Taken
from pgq_thin.web.render import environment
from pgq_thin.web.security import FLASH_COOKIE, SESSION_COOKIE, Session, Signer

__all__ = ["Web", "WebConfig", "web_of"]

PRIVILEGES_TTL = 30.0  # seconds a role's privileges are remembered
RECENT_ACTIONS = 200


@dataclass(frozen=True)
class WebConfig:
    """How the dashboard runs: its database, its token (None: read-only), how long the
    overview's figures are kept (``refresh`` seconds, also the page's refresh period)."""

    dsn: str
    token: str | None = None
    refresh: float = 3.0
    pool_size: int = 4
    page_size: int = 50
    #: Host names the requests may name (``Host`` header); None: any. ``pgq-thin web`` bound to
    #: a loopback address allows only loopback names, so a page of another site whose name
    #: resolves to 127.0.0.1 (DNS rebinding) cannot read the dashboard.
    allowed_hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.token is not None and len(self.token) < 8:
            raise ValueError("the token must be at least 8 characters long")
        if not 0.5 <= self.refresh <= 3600:
            raise ValueError(f"refresh must be 0.5 .. 3600 seconds, got {self.refresh}")
        if not 1 <= self.page_size <= 1000:
            raise ValueError(f"page_size must be 1 .. 1000, got {self.page_size}")


class Web:
    """The state every request shares (``request.app.state.web``)."""

    def __init__(self, config: WebConfig) -> None:
        self.config = config
        self.pool = AdminPool(config.dsn, config.pool_size)
        self.overview = OverviewCache(self.pool, config.refresh)
        self.signer = Signer()
        self.templates = environment()
        #: The last actions taken through this process (newest last), for the actions page;
        #: the log (logger ``pgq_thin.web.actions``) keeps them all.
        self.recent: deque[Taken] = deque(maxlen=RECENT_ACTIONS)
        self._privileges: tuple[float, Privileges] | None = None

    async def privileges(self) -> Privileges:
        """What the database lets this role do (asked again every 30 s)."""
        now = time.monotonic()
        if self._privileges is None or now - self._privileges[0] > PRIVILEGES_TTL:
            async with self.pool.admin() as admin:
                self._privileges = (now, await admin.privileges())
        return self._privileges[1]

    def session(self, request: Request) -> Session | None:
        if not self.config.token:
            return None
        return self.signer.session(request.cookies.get(SESSION_COOKIE))

    async def render(
        self, request: Request, template: str, status: int = 200, **values: Any
    ) -> HTMLResponse:
        """A page with what every page shows: who is signed in, what they may do, a flash."""
        session = self.session(request)
        privileges = await self.privileges()
        token = bool(self.config.token)

        def can(action: str) -> bool:
            return token and session is not None and bool(getattr(privileges, action, False))

        flash = self.signer.unsign("flash", request.cookies.get(FLASH_COOKIE))
        html = self.templates.get_template(template).render(
            request=request,
            path=request.url.path,
            here=_here(request),
            session=session,
            csrf=self.signer.csrf(session) if session else "",
            token_configured=token,
            privileges=privileges,
            can=can,
            flash=flash if isinstance(flash, list) and len(flash) == 2 else None,
            refresh=self.config.refresh,
            **values,
        )
        response = HTMLResponse(html, status_code=status)
        if flash is not None:
            response.delete_cookie(FLASH_COOKIE, path="/")
        return response


def _here(request: Request) -> str:
    """This page's path and query, for the ``next`` field of its forms."""
    query = request.url.query
    return request.url.path + (f"?{query}" if query else "")


def web_of(request: Request) -> Web:
    """The shared state of the application serving ``request``."""
    web: Web = request.app.state.web
    return web
