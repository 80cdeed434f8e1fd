"""Installing, upgrading and removing schema pgq through pgq_thin.migrate and the CLI."""

from __future__ import annotations

import gc
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers import catalog
from helpers.server import PgServer
from psycopg.pq import TransactionStatus

from pgq_thin import migrate, sqlfiles
from pgq_thin.errors import ForeignSchemaError, MigrationError
from pgq_thin.migrations import SqlScriptDirectory


@pytest.fixture(scope="module")
def reference(pg_server: PgServer, template_db: str) -> dict[str, list[str]]:
    """Catalog snapshot of an install made by migrate.upgrade (the session template)."""
    with pg_server.database("ref", template=template_db) as dsn:
        return catalog.snapshot_of(dsn)


def assert_same_catalog(
    expected: dict[str, list[str]], actual: dict[str, list[str]], names: tuple[str, str]
) -> None:
    difference = catalog.diff(expected, actual, names)
    assert not difference, "catalogs differ:\n" + difference


def schema_objects(dsn: str) -> list[str]:
    """Relations in schema pgq (empty when the schema is missing)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'pgq' ORDER BY 1"
        ).fetchall()
    return [row[0] for row in rows]


def has_function(dsn: str, name: str) -> bool:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_proc WHERE pronamespace = 'pgq'::regnamespace"
            " AND proname = %s",
            (name,),
        ).fetchone()
    return bool(row and row[0])


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pgq_thin", *args], capture_output=True, text=True, env=env
    )


# --- revisions and files ------------------------------------------------------------------


def test_one_alembic_revision_per_sql_migration_in_order() -> None:
    scripts = SqlScriptDirectory.packaged()
    chain = list(reversed(list(scripts.walk_revisions("base", "heads"))))
    migrations = sqlfiles.migrations()
    assert migrations, "no SQL migrations found"
    assert [s.revision for s in chain] == [m.revision for m in migrations]
    for previous, script in zip([None, *chain], chain, strict=False):
        assert script.down_revision == (previous.revision if previous else None)
        assert Path(script.path) == sqlfiles.migration(script.revision).path
    assert migrate.head() == migrations[-1].revision


def test_migration_files_are_plain_sql() -> None:
    """Run verbatim inside one transaction: no psql meta-commands, no transaction control."""
    for migration in sqlfiles.migrations():
        for number, line in enumerate(migration.read().splitlines(), 1):
            where = f"{migration.name}:{number}"
            assert not line.lstrip().startswith("\\"), f"{where}: psql meta-command"
            assert line.strip().upper() not in ("BEGIN;", "COMMIT;", "ROLLBACK;"), where


def test_every_function_has_a_file_and_every_file_a_function(
    pgq_conn: psycopg.Connection[Any],
) -> None:
    names = {
        row[0]
        for row in pgq_conn.execute(
            "SELECT proname FROM pg_proc WHERE pronamespace = 'pgq'::regnamespace"
        ).fetchall()
    }
    files = {path.stem for path in sqlfiles.function_files()}
    assert names == files, (
        f"functions without a file: {sorted(names - files)}; "
        f"files without a function: {sorted(files - names)}"
    )


def test_function_files_reapplied_leave_the_catalog_unchanged(
    pg_server: PgServer, pgq_dsn: str, reference: dict[str, list[str]]
) -> None:
    """All migrations == all migrations + every sql/functions file: no function changed
    without a migration."""
    files = sqlfiles.function_files()
    assert files
    args = [arg for path in files for arg in ("-f", str(path))]
    pg_server.psql(pgq_dsn, "-q", "-1", *args)
    assert_same_catalog(reference, catalog.snapshot_of(pgq_dsn), ("migrations", "+functions"))


def test_migrations_run_verbatim_on_an_empty_database(empty_db_dsn: str) -> None:
    assert migrate.current(empty_db_dsn) is None
    assert migrate.upgrade(empty_db_dsn) == migrate.head()
    assert migrate.current(empty_db_dsn) == migrate.head()
    assert has_function(empty_db_dsn, "enqueue")
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        comment = conn.execute("SELECT obj_description('pgq'::regnamespace, 'pg_namespace')")
        row = comment.fetchone()
        assert row is not None and str(row[0]).startswith("pgq-thin")
        versions = conn.execute("SELECT version_num FROM pgq.alembic_version").fetchall()
        assert versions == [(migrate.head(),)]


def test_upgrade_twice_is_a_no_op(pgq_dsn: str, reference: dict[str, list[str]]) -> None:
    assert migrate.upgrade(pgq_dsn) == migrate.head()
    assert_same_catalog(reference, catalog.snapshot_of(pgq_dsn), ("first", "second"))


def test_unknown_revision_is_a_migration_error(pgq_dsn: str) -> None:
    with pytest.raises(MigrationError, match="9999"):
        migrate.upgrade(pgq_dsn, "9999")


# --- the host application's own Alembic history -------------------------------------------


def test_host_alembic_version_table_is_untouched(empty_db_dsn: str) -> None:
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute(
            "CREATE TABLE public.alembic_version (version_num varchar(32) NOT NULL PRIMARY KEY)"
        )
        conn.execute("INSERT INTO public.alembic_version VALUES ('host_app_rev_42')")
    migrate.upgrade(empty_db_dsn)
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        host = conn.execute("SELECT version_num FROM public.alembic_version").fetchall()
        ours = conn.execute("SELECT version_num FROM pgq.alembic_version").fetchall()
    assert host == [("host_app_rev_42",)]
    assert ours == [(migrate.head(),)]


# --- foreign schema -----------------------------------------------------------------------


@pytest.fixture
def foreign_dsn(empty_db_dsn: str) -> str:
    """A database holding someone else's schema pgq (as SkyTools PgQ would)."""
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA pgq")
        conn.execute("CREATE TABLE pgq.queue (queue_id int PRIMARY KEY, queue_name text)")
        conn.execute("INSERT INTO pgq.queue VALUES (1, 'theirs')")
    return empty_db_dsn


def foreign_state(dsn: str) -> tuple[Any, ...]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT obj_description('pgq'::regnamespace, 'pg_namespace'),"
            " (SELECT array_agg(queue_name) FROM pgq.queue),"
            " to_regclass('pgq.alembic_version')"
        ).fetchone()
    assert row is not None
    return (*row, schema_objects(dsn))


def test_foreign_schema_is_refused_and_left_alone(foreign_dsn: str) -> None:
    before = foreign_state(foreign_dsn)
    assert before == (None, ["theirs"], None, ["queue", "queue_pkey"])
    with pytest.raises(ForeignSchemaError, match="not created by pgq-thin"):
        migrate.upgrade(foreign_dsn)
    with pytest.raises(ForeignSchemaError):
        migrate.current(foreign_dsn)
    with pytest.raises(ForeignSchemaError):
        migrate.uninstall(foreign_dsn)
    assert foreign_state(foreign_dsn) == before


def test_cli_refuses_foreign_schema_in_one_line(foreign_dsn: str) -> None:
    result = cli("install", "--dsn", foreign_dsn)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "not created by pgq-thin" in lines[0], result.stderr
    assert "Traceback" not in result.stderr
    assert foreign_state(foreign_dsn)[2] is None


def test_empty_unmarked_schema_is_adopted(empty_db_dsn: str) -> None:
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA pgq")
    assert migrate.upgrade(empty_db_dsn) == migrate.head()
    assert has_function(empty_db_dsn, "enqueue")


# --- uninstall ----------------------------------------------------------------------------


def test_uninstall_then_reinstall(pgq_dsn: str, reference: dict[str, list[str]]) -> None:
    result = migrate.uninstall(pgq_dsn)
    assert result.schema_dropped
    # The roles are cluster-wide and still hold privileges in the template database, so
    # dropping them fails there and they are kept, not an error.
    assert set(result.roles_dropped) | set(result.roles_kept) == set(migrate.ROLES)
    assert set(result.roles_kept) == set(migrate.ROLES)
    assert schema_objects(pgq_dsn) == []
    assert migrate.current(pgq_dsn) is None
    again = migrate.uninstall(pgq_dsn)
    assert not again.schema_dropped
    assert migrate.upgrade(pgq_dsn) == migrate.head()
    assert_same_catalog(reference, catalog.snapshot_of(pgq_dsn), ("installed", "reinstalled"))


def test_uninstall_knows_every_role_the_install_grants(pgq_dsn: str) -> None:
    """migrate.ROLES (what uninstall drops) are exactly the roles the install grants schema
    pgq to: a role added by a migration and forgotten here would outlive an uninstall."""
    with psycopg.connect(pgq_dsn) as conn:
        granted = {
            row[0]
            for row in conn.execute(
                "SELECT a.grantee::regrole::text FROM pg_namespace n, aclexplode(n.nspacl) a"
                " WHERE n.nspname = 'pgq' AND a.grantee <> n.nspowner AND a.grantee <> 0"
            )
        }
    assert granted == set(migrate.ROLES)


def test_downgrade_only_to_base(pgq_dsn: str) -> None:
    with pytest.raises(MigrationError, match="forward-only"):
        migrate.downgrade(pgq_dsn, migrate.head())
    assert migrate.current(pgq_dsn) == migrate.head()
    assert migrate.downgrade(pgq_dsn).schema_dropped
    assert migrate.current(pgq_dsn) is None


def test_cli_uninstall_needs_yes(pgq_dsn: str) -> None:
    refused = cli("uninstall", "--dsn", pgq_dsn)
    assert refused.returncode == 2
    assert "--yes" in refused.stderr and "Traceback" not in refused.stderr
    assert migrate.current(pgq_dsn) == migrate.head()
    done = cli("uninstall", "--yes", "--dsn", pgq_dsn)
    assert done.returncode == 0, done.stderr
    assert "dropped schema pgq" in done.stdout
    assert migrate.current(pgq_dsn) is None


# --- borrowed psycopg connections ---------------------------------------------------------


@pytest.mark.parametrize("autocommit", [True, False], ids=["autocommit", "transactional"])
def test_upgrade_on_a_callers_connection(empty_db_dsn: str, autocommit: bool) -> None:
    with psycopg.connect(empty_db_dsn, autocommit=autocommit) as conn:
        assert migrate.upgrade(conn) == migrate.head()
        gc.collect()  # the SQLAlchemy engine wrapping it is gone; the connection is not
        assert not conn.closed
        assert conn.autocommit is autocommit
        assert conn.info.transaction_status == TransactionStatus.IDLE
        assert migrate.current(conn) == migrate.head()
        row = conn.execute("SELECT 1").fetchone()
        assert row == (1,)
        conn.rollback()
    # committed, seen from another session
    assert has_function(empty_db_dsn, "enqueue")


def test_callers_connection_gets_no_lasting_notice_handler(
    empty_db_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        migrate.upgrade(conn)
        migrate.current(conn)
        with caplog.at_level(logging.DEBUG, logger="sqlalchemy"):
            conn.execute("DO $$ BEGIN RAISE NOTICE 'after the migration'; END $$")
    assert [r for r in caplog.records if "after the migration" in r.getMessage()] == []


def test_connection_inside_a_transaction_is_refused(empty_db_dsn: str) -> None:
    with psycopg.connect(empty_db_dsn) as conn:
        conn.execute("CREATE TABLE public.mine (x int)")
        with pytest.raises(MigrationError, match="inside a transaction"):
            migrate.upgrade(conn)
        assert conn.info.transaction_status == TransactionStatus.INTRANS
        conn.commit()
    assert migrate.current(empty_db_dsn) is None
    assert schema_objects(empty_db_dsn) == []


def test_failure_on_a_callers_connection_leaves_it_usable(foreign_dsn: str) -> None:
    with psycopg.connect(foreign_dsn, autocommit=True) as conn:
        with pytest.raises(ForeignSchemaError):
            migrate.upgrade(conn)
        assert conn.autocommit
        assert conn.info.transaction_status == TransactionStatus.IDLE
        assert conn.execute("SELECT count(*) FROM pgq.queue").fetchone() == (1,)


def test_database_errors_surface_as_psycopg_errors(empty_db_dsn: str) -> None:
    with psycopg.connect(empty_db_dsn, autocommit=True) as conn:
        conn.execute("CREATE ROLE pgq_test_weakling NOLOGIN")
        try:
            conn.execute("SET ROLE pgq_test_weakling")
            with pytest.raises(psycopg.errors.InsufficientPrivilege):
                migrate.upgrade(conn)
            assert conn.info.transaction_status == TransactionStatus.IDLE
        finally:
            conn.execute("RESET ROLE")
            conn.execute("DROP ROLE pgq_test_weakling")
    assert schema_objects(empty_db_dsn) == []


# --- the DBA script -----------------------------------------------------------------------


def test_sql_script_installs_the_same_catalog_and_upgrade_takes_over(
    pg_server: PgServer, empty_db_dsn: str, reference: dict[str, list[str]], tmp_path: Any
) -> None:
    script = tmp_path / "install.sql"
    result = cli("sql")
    assert result.returncode == 0, result.stderr
    assert result.stdout == migrate.sql()
    script.write_text(result.stdout)
    pg_server.psql(empty_db_dsn, "-q", "-f", str(script))
    applied = catalog.snapshot_of(empty_db_dsn)
    assert_same_catalog(reference, applied, ("alembic", "sql()"))
    assert migrate.current(empty_db_dsn) == migrate.head()
    assert migrate.upgrade(empty_db_dsn) == migrate.head()
    assert_same_catalog(applied, catalog.snapshot_of(empty_db_dsn), ("sql()", "then upgrade()"))
    # applied twice, the script refuses before changing anything
    again = pg_server.psql(empty_db_dsn, "-q", "-f", str(script), check=False)
    assert again.returncode != 0
    assert "expects none" in again.stderr
    assert_same_catalog(applied, catalog.snapshot_of(empty_db_dsn), ("once", "twice"))


def test_sql_script_refuses_a_foreign_schema(
    pg_server: PgServer, foreign_dsn: str, tmp_path: Any
) -> None:
    script = tmp_path / "install.sql"
    script.write_text(migrate.sql())
    before = foreign_state(foreign_dsn)
    result = pg_server.psql(
        foreign_dsn, "-q", "-v", "VERBOSITY=verbose", "-f", str(script), check=False
    )
    assert result.returncode != 0
    assert "not created by pgq-thin" in result.stderr
    assert "PQ900" in result.stderr
    assert foreign_state(foreign_dsn) == before


def test_sql_upgrade_script_from_head_is_empty_of_migrations() -> None:
    text = migrate.sql(from_revision=migrate.head())
    assert "-- ---- revision" not in text
    assert f"'{migrate.head()}'" in text
    with pytest.raises(MigrationError, match="unknown revision"):
        migrate.sql(from_revision="no-such-revision")


# --- the CLI ------------------------------------------------------------------------------


def test_cli_install_and_version(empty_db_dsn: str) -> None:
    env = {**_base_env(), "PGQ_DSN": empty_db_dsn}
    before = cli("version", env=env)
    assert before.returncode == 0, before.stderr
    assert "pgq-thin not installed" in before.stdout
    first = cli("install", env=env)
    assert first.returncode == 0, first.stderr
    assert f"installed pgq-thin schema at revision {migrate.head()}" in first.stdout
    second = cli("install", env=env)
    assert "already at revision" in second.stdout
    after = cli("version", env=env)
    assert f"revision {migrate.head()} (up to date)" in after.stdout


def test_cli_dsn_falls_back_to_libpq_environment(pg_server: PgServer, empty_db_dsn: str) -> None:
    from psycopg.conninfo import conninfo_to_dict

    params = conninfo_to_dict(empty_db_dsn)
    env = _base_env()
    env.pop("PGQ_DSN", None)
    for key, var in (
        ("host", "PGHOST"),
        ("port", "PGPORT"),
        ("user", "PGUSER"),
        ("dbname", "PGDATABASE"),
    ):
        if params.get(key):
            env[var] = str(params[key])
    result = cli("install", env=env)
    assert result.returncode == 0, result.stderr
    assert migrate.current(empty_db_dsn) == migrate.head()


def test_cli_unreachable_database_is_one_line(tmp_path: Any) -> None:
    dsn = f"host={tmp_path} port=1 dbname=nowhere connect_timeout=2"
    result = cli("install", "--dsn", dsn)
    assert result.returncode == 1
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith("pgq-thin install: ")


def _base_env() -> dict[str, str]:
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("PG")}
