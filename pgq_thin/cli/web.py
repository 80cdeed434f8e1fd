"""``web``: serve the dashboard (:mod:`pgq_thin.web`, extra ``web``) with uvicorn."""

from __future__ import annotations

import argparse
import ipaddress
import logging
import os
import sys

from pgq_thin.cli._common import EXIT_OK, Command, UsageError, database
from pgq_thin.errors import require_extra

TOKEN_ENV = "PGQ_WEB_TOKEN"
# Host names a dashboard bound to a loopback address answers to (no other site's name).
LOOPBACK_NAMES = ("127.0.0.1", "localhost")


def _add_web(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default: 127.0.0.1 only)"
    )
    parser.add_argument("--port", type=int, default=8080, help="port (default: 8080)")
    parser.add_argument(
        "--token",
        default=None,
        help=(
            f"token that allows actions (default: ${TOKEN_ENV}, better: a command line is seen "
            "by every user of the machine; none: the page is read-only)"
        ),
    )
    parser.add_argument(
        "--refresh",
        type=float,
        default=3.0,
        help="seconds between overview reads and page refreshes (default: 3)",
    )
    parser.add_argument(
        "--log-level", default="info", choices=("debug", "info", "warning", "error")
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _cmd_web(args: argparse.Namespace) -> int:
    require_extra("starlette", "web", "pgq-thin web")
    require_extra("uvicorn", "web", "pgq-thin web")
    import uvicorn

    from pgq_thin.web import WebConfig, create_app

    token = getattr(args, "token", None) or os.environ.get(TOKEN_ENV) or None
    host, port = getattr(args, "host", "127.0.0.1"), getattr(args, "port", 8080)
    try:
        config = WebConfig(
            dsn=database(args).dsn,
            token=token,
            refresh=getattr(args, "refresh", 3.0),
            # (an IPv6 Host header does not survive Starlette's host check: any name then)
            allowed_hosts=LOOPBACK_NAMES if _loopback(host) and ":" not in host else None,
        )
    except ValueError as err:
        raise UsageError(str(err)) from None
    level = getattr(args, "log_level", "info")
    logging.basicConfig(
        level=level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    mode = "actions need the token" if token else f"read-only (no --token or ${TOKEN_ENV})"
    print(f"pgq-thin web: http://{host}:{port}/ ({mode})", file=sys.stderr, flush=True)
    if not _loopback(host):
        print(
            f"pgq-thin web: listening on {host}, not only this machine: put it behind TLS",
            file=sys.stderr,
            flush=True,
        )
    uvicorn.run(
        create_app(config),
        host=host,
        port=port,
        log_level=level,
        server_header=False,
        proxy_headers=False,
    )
    return EXIT_OK


COMMANDS = {
    "web": Command(
        "serve the web dashboard (extra 'web'; read-only unless given --token)",
        _add_web,
        _cmd_web,
    ),
}
