"""The dashboard after the database went away: the first request once it is back is served
(every pooled connection died with the restart; none of them may answer an error page), and
a database without the schema gives one line, on the page and in the log, not a traceback
per refresh."""

from __future__ import annotations

import logging
from typing import Any

import psycopg
import pytest
from helpers.wait import wait_for
from helpers.web import serving

from pgq_thin import Queue
from pgq_thin.web.data import APPLICATION_NAME


def web_backends(conn: psycopg.Connection[Any]) -> int:
    row = conn.execute(
        "SELECT count(*) FROM pg_stat_activity"
        " WHERE application_name = %s AND datname = current_database()",
        (APPLICATION_NAME,),
    ).fetchone()
    assert row is not None
    return int(row[0])


def terminate_web_connections(dsn: str) -> int:
    """What a restart does to the dashboard's idle connections: their backends end (and are
    gone, their sockets closed, when this returns: a restart ends them before the next
    request)."""
    with psycopg.connect(dsn, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
            " WHERE application_name = %s AND datname = current_database()",
            (APPLICATION_NAME,),
        ).fetchone()
        assert row is not None
        wait_for(lambda: web_backends(conn) == 0, 20, "the terminated backends to exit")
    return int(row[0])


def test_the_first_request_after_the_database_is_back_is_served(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue("back.a")
    with serving(pgq_dsn, token=None, pool_size=4) as server, server.client() as client:
        # Open every pooled connection: four requests at once (each holds a handle).
        import concurrent.futures

        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            pages = list(pool.map(lambda _: client.get("/entrypoint?name=back.a"), range(8)))
        assert {p.status_code for p in pages} == {200}
        assert terminate_web_connections(pgq_dsn) >= 2
        answers = [client.get(path).status_code for path in ("/entrypoint?name=back.a",) * 4]
        assert answers == [200, 200, 200, 200]  # before: 503 once per dead pooled connection
        assert client.get("/").status_code == 200


def test_a_database_without_the_schema_is_one_line(
    empty_db_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="pgq_thin.web")
    with serving(empty_db_dsn, token=None) as server, server.client() as client:
        pages = [client.get("/") for _ in range(3)]
        for page in pages:
            assert page.status_code == 500
            assert "schema pgq is not installed" in page.text
            assert "run `pgq-thin install`" in page.text or "pgq-thin install" in page.text
            assert "Traceback" not in page.text
        client.get("/entrypoint?name=x")
    web_lines = [r for r in caplog.records if r.name.startswith("pgq_thin.web")]
    assert [r.getMessage() for r in web_lines if r.exc_info] == [], "a traceback in the log"
    renewals = [r.getMessage() for r in web_lines if "renewing the overview" in r.getMessage()]
    assert len(renewals) <= 1, renewals  # one line, not one per refresh
    assert all("schema pgq is not installed" in line for line in renewals)
