"""The ASGI application, assembled: routes, security headers, lifespan.

:func:`create_app` builds a Starlette application over a :class:`WebConfig`. Pages are in
:mod:`pgq_thin.web.pages`, actions in :mod:`pgq_thin.web.actions`; both read and act only
through the admin API (:mod:`pgq_thin.web.data`), share :class:`~pgq_thin.web.state.Web`
(:mod:`pgq_thin.web.state`) and parse their input with :mod:`pgq_thin.web.forms`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from importlib.resources import files

from starlette.applications import Starlette
from starlette.datastructures import MutableHeaders
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.routing import Mount
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from pgq_thin.web import actions, pages
from pgq_thin.web.state import Web, WebConfig

__all__ = ["Web", "WebConfig", "create_app"]

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
