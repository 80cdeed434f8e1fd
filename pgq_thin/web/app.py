"""The ASGI application: configuration, shared state, routes, security headers.

:func:`create_app` builds a Starlette application over a :class:`WebConfig`. Pages are in
:mod:`pgq_thin.web.pages`, actions in :mod:`pgq_thin.web.actions`; both read and act only
through the admin API (:mod:`pgq_thin.web.data`).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib.resources import files
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pgq_thin.records import Privileges
from pgq_thin.web import actions, pages
from pgq_thin.web.data import AdminPool, OverviewCache, Taken
from pgq_thin.web.render import environment
from pgq_thin.web.security import FLASH_COOKIE, SESSION_COOKIE, Session, Signer

__all__ = ["Web", "WebConfig", "create_app"]

log = logging.getLogger("pgq_thin.web")

PRIVILEGES_TTL = 30.0  # seconds a role's privileges are remembered
RECENT_ACTIONS = 200


CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


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


class SecurityHeaders:
    """ASGI middleware: the headers of :data:`HEADERS` on every HTTP response (unless the
    response set its own)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, with_headers)


def create_app(config: WebConfig) -> Starlette:
    """The dashboard over ``config`` (its connections open on first use)."""
    web = Web(config)

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        web.overview.prime()
        try:
            yield
        finally:
            await web.overview.close()
            await web.pool.close()

    static = StaticFiles(directory=str(files("pgq_thin.web") / "static"))
    routes = [
        *pages.ROUTES,
        *actions.ROUTES,
        Mount("/static", app=static, name="static"),
    ]
    app = Starlette(
        routes=routes,
        middleware=[
            Middleware(SecurityHeaders),
            Middleware(TrustedHostMiddleware, allowed_hosts=list(config.allowed_hosts or ["*"])),
        ],
        exception_handlers=pages.EXCEPTION_HANDLERS,
        lifespan=lifespan,
    )
    app.state.web = web
    return app
