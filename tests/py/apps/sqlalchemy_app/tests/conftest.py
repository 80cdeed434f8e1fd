"""The application's fixtures: pgq_thin.testing gives the database; the app points its engine
at it (psycopg 3 or psycopg2: $APP_DRIVER)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from psycopg.conninfo import conninfo_to_dict
from shop import db
from sqlalchemy.engine import URL

pytest_plugins = ["pgq_thin.testing"]


@pytest.fixture(autouse=True)
def app_db(pgq_database: str) -> Iterator[str]:
    params = conninfo_to_dict(pgq_database)
    host = str(params.get("host") or "")
    url = URL.create(
        f"postgresql+{os.environ.get('APP_DRIVER', 'psycopg')}",
        username=str(params.get("user") or "postgres"),
        password=str(params["password"]) if params.get("password") else None,
        host=None if host.startswith("/") else host or None,
        port=int(params["port"]) if params.get("port") else None,
        database=str(params["dbname"]),
        query={"host": host} if host.startswith("/") else {},
    )
    engine = db.configure(url.render_as_string(hide_password=False))
    yield pgq_database
    engine.dispose()
