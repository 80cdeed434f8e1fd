"""An application with its own Alembic history installs pgq in one of its revisions
(tests/py/apps/alembic_app: its own env.py; a001 orders, a002 pgq, a003 customers, a004 which
fails when $APP_FAIL is set), run through ``alembic`` itself, on psycopg 3 and psycopg2.

What it shows (docs/integrations.md, "Alembic"): ``alembic upgrade head`` exits 0 with pgq
installed and recorded in ``pgq.alembic_version``; a failing later revision rolls the
application's changes and pgq's back together and the rerun works; ``alembic downgrade``
below the pgq revision drops schema pgq; the offline script (``--sql``) carries pgq's SQL and
installs it when applied; ``pgq-thin install`` and ``pgq_thin.migrate.upgrade`` take over.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import psycopg
import pytest
from helpers.apps import APPS, clean_env, sqlalchemy_url, tool
from helpers.server import PgServer

from pgq_thin import migrate

APP = APPS / "alembic_app"


def alembic(dsn: str, *args: str, driver: str = "psycopg", **env: str) -> Any:
    return tool(
        "alembic",
        *args,
        cwd=APP,
        env=clean_env(APP_DATABASE_URL=sqlalchemy_url(dsn, driver), APP_DSN=dsn, **env),
    )


def tables(dsn: str) -> dict[str, Any]:
    with psycopg.connect(dsn, autocommit=True) as conn:
        found = {
            r[0]
            for r in conn.execute(
                "SELECT table_schema || '.' || table_name FROM information_schema.tables"
                " WHERE table_schema IN ('public', 'pgq')"
            )
        }
        app_version = (
            conn.execute("SELECT version_num FROM public.alembic_version").fetchone()
            if "public.alembic_version" in found
            else None
        )
        schema = conn.execute("SELECT to_regnamespace('pgq') IS NOT NULL").fetchone()
    return {
        "tables": found,
        "app": app_version[0] if app_version else None,
        "pgq_schema": bool(schema and schema[0]),
    }


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_the_apps_history_installs_pgq_atomically(
    pg_server: PgServer, empty_db_dsn: str, driver: str
) -> None:
    dsn = empty_db_dsn
    failed = alembic(dsn, "upgrade", "head", driver=driver, APP_FAIL="1")
    assert failed.returncode == 1, failed.stderr
    assert "division by zero" in failed.stderr
    after_failure = tables(dsn)
    # one transaction: the app's tables, pgq's schema and both version tables are gone again
    assert after_failure == {"tables": set(), "app": None, "pgq_schema": False}

    done = alembic(dsn, "upgrade", "head", driver=driver)
    assert done.returncode == 0, done.stderr
    assert "pgq-thin: applying migration 0001 (0001_init.sql)" in done.stderr
    state = tables(dsn)
    assert state["app"] == "a004" and state["pgq_schema"]
    assert {"public.orders", "public.customers", "pgq.jobs", "pgq.alembic_version"} <= state[
        "tables"
    ]
    assert migrate.current(dsn) == "0002"
    with psycopg.connect(dsn) as conn:  # the queue works, in the app's own transaction
        conn.execute("INSERT INTO orders (item) VALUES ('book')")
        row = conn.execute("SELECT pgq.enqueue('ship', '{\"order\": 1}')").fetchone()
        assert row is not None and row[0] > 0

    # the package's own ways take over from the app's install: nothing left to do
    assert migrate.upgrade(dsn) == migrate.head()
    installed = tool("pgq-thin", "install", "--dsn", dsn, cwd=APP, env=clean_env())
    assert installed.returncode == 0, installed.stderr
    assert f"revision {migrate.head()}" in installed.stdout

    again = alembic(dsn, "upgrade", "head", driver=driver)  # a rerun at head: nothing to do
    assert again.returncode == 0, again.stderr
    assert "applying migration" not in again.stderr


def test_downgrade_below_the_pgq_revision_drops_schema_pgq(empty_db_dsn: str) -> None:
    dsn = empty_db_dsn
    assert alembic(dsn, "upgrade", "head").returncode == 0
    down = alembic(dsn, "downgrade", "a001")
    assert down.returncode == 0, down.stderr
    state = tables(dsn)
    assert state == {
        "tables": {"public.orders", "public.alembic_version"},
        "app": "a001",
        "pgq_schema": False,
    }
    with psycopg.connect(dsn, autocommit=True) as conn:  # the roles stay (cluster-wide)
        roles = {r[0] for r in conn.execute("SELECT rolname FROM pg_roles")}
    assert {"pgq_producer", "pgq_worker"} <= roles
    up = alembic(dsn, "upgrade", "head")
    assert up.returncode == 0, up.stderr
    assert migrate.current(dsn) == "0002" and tables(dsn)["app"] == "a004"


def test_the_offline_script_carries_pgqs_sql(
    pg_server: PgServer, empty_db_dsn: str, tmp_path: Path
) -> None:
    offline = alembic(empty_db_dsn, "upgrade", "head", "--sql")
    assert offline.returncode == 0, offline.stderr
    script = offline.stdout
    for migration in migrate.sqlfiles.migrations():
        assert f"-- ---- revision {migration.revision}: {migration.name} ----" in script
    assert "INSERT INTO pgq.alembic_version (version_num) VALUES ('0002');" in script
    assert script.index("CREATE TABLE orders") < script.index("revision 0001")
    assert script.index("revision 0001") < script.index("CREATE TABLE customers")
    # applied as a DBA would: one transaction, the app and pgq installed together
    (tmp_path / "upgrade.sql").write_text(script)
    pg_server.psql(empty_db_dsn, "-q", "-f", str(tmp_path / "upgrade.sql"))
    assert migrate.current(empty_db_dsn) == "0002"
    assert tables(empty_db_dsn)["app"] == "a004"
    # the same script again is refused (one transaction: it changes nothing)
    again = pg_server.psql(empty_db_dsn, "-q", "-f", str(tmp_path / "upgrade.sql"), check=False)
    assert again.returncode != 0


def test_the_migrate_upgrade_call_from_inside_a_revision_keeps_alembic_working(
    empty_db_dsn: str,
) -> None:
    """pgq_thin.migrate.upgrade() on its own connection, called from an app revision: it used to
    remove the app's Alembic proxies (``alembic upgrade head`` exited 1, KeyError: 'config')."""
    done = alembic(empty_db_dsn, "upgrade", "head", APP_PGQ_WAY="nested")
    assert done.returncode == 0, done.stderr
    assert tables(empty_db_dsn)["app"] == "a004"
    assert migrate.current(empty_db_dsn) == migrate.head()


@pytest.mark.parametrize("driver", ["psycopg", "psycopg2"])
def test_a_busy_install_lock_names_its_holder_and_spares_the_callers_transaction(
    empty_db_dsn: str, driver: str
) -> None:
    import sqlalchemy as sa

    engine = sa.create_engine(sqlalchemy_url(empty_db_dsn, driver))
    holder = psycopg.connect(empty_db_dsn, application_name="holds the lock")
    try:
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (migrate.LOCK_KEY,))
        with engine.connect() as conn:
            conn.exec_driver_sql("CREATE TABLE mine (id int)")
            with pytest.raises(migrate.MigrationError, match="application 'holds the lock'"):
                migrate.upgrade_in_transaction(conn, lock_timeout=0.2)
            conn.exec_driver_sql("INSERT INTO mine VALUES (1)")  # still usable
            conn.commit()
        holder.rollback()
        assert tables(empty_db_dsn) == {
            "tables": {"public.mine"},
            "app": None,
            "pgq_schema": False,
        }
        with engine.begin() as conn:  # the lock free: installs in the caller's transaction
            assert migrate.upgrade_in_transaction(conn) == migrate.head()
            assert migrate.upgrade_in_transaction(conn, "0001") == migrate.head()  # forward-only
        assert migrate.current(empty_db_dsn) == migrate.head()
    finally:
        holder.close()
        engine.dispose()
