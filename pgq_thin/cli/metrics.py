"""``pgq-thin metrics --port N``: the Prometheus exporter of the queue's SQL metrics for a whole
database (:mod:`pgq_thin.exporter`), until SIGTERM or Ctrl-C. Needs the extra ``metrics``."""

from __future__ import annotations

import argparse
import signal
import threading

from pgq_thin.cli._common import EXIT_OK, Command, UsageError, open_admin, out
from pgq_thin.errors import require_extra


def _add(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--port", type=int, required=True, help="port to serve /metrics on (0: any free port)"
    )
    parser.add_argument(
        "--addr", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )


def _cmd(args: argparse.Namespace) -> int:
    require_extra("prometheus_client", "metrics", "pgq-thin metrics")
    if not 0 <= args.port <= 65535:
        raise UsageError(f"--port must be a port number (0-65535), got {args.port}")
    from pgq_thin.exporter import serve

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with open_admin(args) as admin:
        admin.metrics()  # fails now, as one line, when the database is not set up
        server, thread, port = serve(admin, args.addr, args.port)
        info = admin.connection.info
        out(
            f"pgq-thin metrics: serving http://{args.addr}:{port}/metrics for database "
            f"{info.dbname} on {info.host}:{info.port}"
        )
        try:
            while not stop.wait(1.0):
                pass
        except KeyboardInterrupt:
            pass
        finally:
            server.shutdown()
            server.server_close()
            thread.join(timeout=5)
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "metrics": Command(
        "Prometheus exporter of the queue's SQL metrics for this database (--port N)", _add, _cmd
    ),
}
