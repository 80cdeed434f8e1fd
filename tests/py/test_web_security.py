"""The dashboard's guard, over real HTTP against a real server and database: actions need the
token and a form of the dashboard's own (CSRF), come by POST only, are refused for a role
the database would refuse, are logged with who did them; everything shown is escaped."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Callable

import httpx
import psycopg
import pytest
from helpers.wait import wait_for
from helpers.web import TOKEN, serving, sign_in

from pgq_thin import Admin, Queue
from pgq_thin.web import WebConfig


def paused(dsn: str, entrypoint: str) -> bool:
    with Admin(dsn) as admin:
        return any(m.paused for m in admin.metrics(entrypoint))


def test_an_action_without_the_token_is_refused(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue("sec.a")
    with serving(pgq_dsn) as web, web.client() as anonymous:
        page = anonymous.get("/").text
        assert "sec.a" in page and "/actions/pause" not in page  # no action offered
        assert 'id="sign-in"' in page
        # no session, no token
        refused = anonymous.post("/actions/pause", data={"entrypoint": "sec.a"})
        assert refused.status_code == 403 and "not signed in" in refused.text
        # a wrong token at sign-in, or as a bearer
        wrong = anonymous.post("/login", data={"who": "eve", "token": "guess-guess", "next": "/"})
        assert wrong.status_code == 403 and "pgq_session" not in wrong.headers.get("set-cookie", "")
        bearer = anonymous.post(
            "/actions/pause",
            data={"entrypoint": "sec.a"},
            headers={"Authorization": "Bearer guess-guess"},
        )
        assert bearer.status_code == 403 and bearer.json()["ok"] is False
        # a forged session cookie
        anonymous.cookies.set("pgq_session", "eyJhIjoxfQ.forged")
        assert anonymous.post("/actions/pause", data={"entrypoint": "sec.a"}).status_code == 403
        # GET never acts
        assert anonymous.get("/actions/pause?entrypoint=sec.a").status_code == 405
        assert not paused(pgq_dsn, "sec.a")


def test_csrf_and_origin_are_checked(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue("sec.c")
    with serving(pgq_dsn) as web, web.client() as client:
        csrf = sign_in(client)
        form = {"entrypoint": "sec.c", "next": "/"}
        no_csrf = client.post("/actions/pause", data=form)
        assert no_csrf.status_code == 403 and "CSRF" in no_csrf.text
        other = client.post("/actions/pause", data={**form, "csrf": "x" * len(csrf)})
        assert other.status_code == 403
        foreign = client.post(
            "/actions/pause",
            data={**form, "csrf": csrf},
            headers={"Origin": "http://evil.example"},
        )
        assert foreign.status_code == 403 and "another site" in foreign.text
        cross = client.post(
            "/actions/pause", data={**form, "csrf": csrf}, headers={"Sec-Fetch-Site": "cross-site"}
        )
        assert cross.status_code == 403
        assert not paused(pgq_dsn, "sec.c")
        # the same form with its token works, and sends the browser back where it came from
        done = client.post("/actions/pause", data={**form, "csrf": csrf, "next": "//evil.example"})
        assert done.status_code == 303 and done.headers["location"] == "/"
        assert paused(pgq_dsn, "sec.c")
        # another session's token does not fit this session
        with web.client() as second:
            sign_in(second, "bob")
            refused = second.post("/actions/resume", data={**form, "csrf": csrf})
            assert refused.status_code == 403
        assert paused(pgq_dsn, "sec.c")


def test_every_action_is_logged_with_who_did_it(
    pgq_dsn: str, caplog: pytest.LogCaptureFixture
) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue("sec.log")
    caplog.set_level(logging.INFO, logger="pgq_thin.web")
    with serving(pgq_dsn) as web, web.client() as client:
        csrf = sign_in(client, "carol")
        client.post("/actions/pause", data={"entrypoint": "sec.log", "csrf": csrf})
        answer = client.post(
            "/actions/resume",
            data={"entrypoint": "sec.log"},
            headers={"Authorization": f"Bearer {TOKEN}", "X-Pgq-Actor": "deploy-bot"},
        )
        assert answer.status_code == 200 and answer.json() == {
            "ok": True,
            "message": "resumed sec.log",
        }
        client.post("/actions/pause", data={"entrypoint": "sec.log"})  # refused: no csrf
    lines = [r.getMessage() for r in caplog.records if r.name == "pgq_thin.web.actions"]
    assert "web sign-in by carol from 127.0.0.1" in lines
    assert "web action pause by carol from 127.0.0.1: paused sec.log" in lines
    assert "web action resume by deploy-bot from 127.0.0.1: resumed sec.log" in lines
    assert any(line.startswith("web action pause refused (by carol") for line in lines)
    with serving(pgq_dsn) as web, web.client() as client:
        client.post("/actions/pause", data={"entrypoint": "sec.log"})
    assert any(
        r.getMessage().startswith("web action pause refused (by anonymous from 127.0.0.1)")
        for r in caplog.records
    )


def test_the_actions_page_lists_who_did_what(pgq_dsn: str) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue("sec.audit")
    with serving(pgq_dsn) as web, web.client() as client:
        csrf = sign_in(client, "erin")
        client.post("/actions/pause", data={"entrypoint": "sec.audit", "csrf": csrf})
        client.post("/actions/resume", data={"entrypoint": "sec.audit"})  # no csrf: refused
        client.post("/actions/pause", data={"entrypoint": "a\tb", "csrf": csrf})  # bad name
        page = client.get("/actions").text
    rows = page.split("<tbody>")[1].split("</tr>")[:3]  # newest first
    assert "erin" in rows[2] and "paused sec.audit" in rows[2] and ">ok<" in rows[2]
    assert ">refused<" in rows[1] and "CSRF" in rows[1]
    assert ">failed<" in rows[0] and "invalid entrypoint" in rows[0]


def test_read_only_without_a_token(pgq_dsn: str) -> None:
    """Started from the command line without --token or PGQ_WEB_TOKEN: nothing acts."""
    with Queue(pgq_dsn) as queue:
        job = queue.enqueue("sec.ro")
    with Admin(pgq_dsn) as admin:
        admin.pause("sec.ro.paused")
    process = subprocess.Popen(
        [sys.executable, "-m", "pgq_thin", "web", "--dsn", pgq_dsn, "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PGQ_WEB_TOKEN": ""},
    )
    try:
        assert process.stdout is not None
        first = process.stdout.readline()
        assert "read-only" in first, first
        url = wait_for(lambda: _listening(process), 20, "uvicorn's address line")
        with httpx.Client(base_url=url) as client:
            page = client.get("/").text
            assert "read-only" in page and "/actions/" not in page and "sign in" not in page
            job_page = client.get(f"/jobs/{job}").text
            assert "/actions/cancel" not in job_page
            refused = client.post("/actions/cancel", data={"ids": str(job)})
            assert refused.status_code == 403 and "read-only" in refused.text
            bearer = client.post(
                "/actions/resume",
                data={"entrypoint": "sec.ro.paused"},
                headers={"Authorization": "Bearer anything"},
            )
            assert bearer.status_code == 403
            assert client.post("/login", data={"who": "a", "token": "b"}).status_code == 403
            # bound to 127.0.0.1: another site's name for this address is refused (DNS rebinding)
            rebound = client.get("/", headers={"Host": "evil.example"})
            assert rebound.status_code == 400 and "sec.ro" not in rebound.text
            assert client.get("/", headers={"Host": "localhost"}).status_code == 200
    finally:
        process.terminate()
        process.wait(20)
    with Admin(pgq_dsn) as admin:
        still = admin.job(job)
        assert still is not None and still.status == "queued"
        assert paused(pgq_dsn, "sec.ro.paused")


def _listening(process: subprocess.Popen[str]) -> str | None:
    assert process.stdout is not None
    line = process.stdout.readline()
    if "Uvicorn running on" in line:
        return line.split("running on ")[1].split(" ")[0]
    assert process.poll() is None, f"pgq-thin web exited: {line}"
    return None


def test_a_read_only_role_hides_and_refuses_actions(
    pgq_dsn: str, login_role: Callable[..., str]
) -> None:
    """A token, but the database role may only read (pgq_reader): signed in, still no action."""
    with Queue(pgq_dsn) as queue:
        job = queue.enqueue("sec.role")
    reader = login_role("pgq_reader")
    with serving(reader) as web, web.client() as client:
        csrf = sign_in(client, "dave")
        page = client.get("/").text
        assert "may only read" in page and "/actions/" not in page
        assert "/actions/cancel" not in client.get(f"/jobs/{job}").text
        refused = client.post("/actions/pause", data={"entrypoint": "sec.role", "csrf": csrf})
        assert refused.status_code == 403 and "may not call pgq.pause" in refused.text
        refused = client.post("/actions/cancel", data={"ids": str(job), "csrf": csrf})
        assert refused.status_code == 403
    assert not paused(pgq_dsn, "sec.role")


def test_pages_escape_what_they_show(pgq_dsn: str) -> None:
    evil = "<script>alert(1)</script>"
    with Queue(pgq_dsn) as queue:
        job = queue.enqueue(f"sec.{evil}", {"html": evil}, dedupe_key=evil)
    with serving(pgq_dsn) as web, web.client() as client:
        for path in ("/", f"/jobs/{job}", "/failed?error=" + evil, "/search?q=%3Cscript%3E"):
            html = client.get(path).text
            assert evil not in html, path
        assert "&lt;script&gt;alert(1)&lt;/script&gt;" in client.get(f"/jobs/{job}").text
        headers = client.get("/").headers
        assert "script-src 'self'" in headers["content-security-policy"]
        assert headers["x-frame-options"] == "DENY"


def test_bad_input_is_shown_not_raised(pgq_dsn: str) -> None:
    with serving(pgq_dsn) as web, web.client() as client:
        assert client.get("/jobs/999999").status_code == 404
        bad = client.get("/entrypoint?name=x&state=bogus")
        assert bad.status_code == 400 and "unknown state" in bad.text
        bad = client.get("/failed?since=yesterday")
        assert bad.status_code == 400 and "not a time" in bad.text
        bad = client.get("/entrypoint?name=x&state=queued&after=garbage")
        assert bad.status_code == 400 and "cursor" in bad.text


def test_config_refuses_a_short_token() -> None:
    with pytest.raises(ValueError, match="at least 8"):
        WebConfig(dsn="", token="short")


def test_a_role_that_may_not_read_jobs_still_sees_the_numbers(
    pgq_dsn: str, login_role: Callable[..., str]
) -> None:
    with Queue(pgq_dsn) as queue:
        queue.enqueue("sec.numbers")
    with serving(login_role("pgq_producer")) as web, web.client() as client:
        page = client.get("/")
        assert page.status_code == 200 and "sec.numbers" in page.text
        assert "may not read jobs (GRANT pgq_reader" in page.text


def test_a_database_that_cannot_be_reached_is_a_503_page(pgq_dsn: str) -> None:
    gone = psycopg.conninfo.make_conninfo(pgq_dsn, dbname="pgq_no_such_database")
    with serving(gone) as web, web.client() as client:
        page = client.get("/")
        assert page.status_code == 503 and "Database unavailable" in page.text
        assert "pgq_no_such_database" in page.text
