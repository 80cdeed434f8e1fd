"""The pages (GET): overview, entrypoint, job, failed jobs, schedules, search, sign-in.

Each handler borrows an admin handle, makes the calls its page needs and renders a template.
Bad input in a query string (an unknown state, a cursor that does not parse, a time that is
not a time) is shown on the page as the database or this module phrased it.
"""

from __future__ import annotations

from typing import Any

import psycopg
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from pgq_thin.errors import PgqError, PrivilegeMissing, SetupError, one_line
from pgq_thin.web.charts import charts
from pgq_thin.web.forms import BadInput, failed_filter, parse_time
from pgq_thin.web.graph import MAX_DRAWN, draw
from pgq_thin.web.state import web_of

__all__ = ["EXCEPTION_HANDLERS", "ROUTES", "parse_time"]

STATES = ("queued", "scheduled", "running", "successful", "failed", "canceled")


async def overview(request: Request) -> Response:
    web = web_of(request)
    data = await web.overview.get()
    return await web.render(request, "overview.html", ov=data, ch=charts(data.series))


async def overview_live(request: Request) -> Response:
    """The part of the overview that refreshes itself (HTML, fetched by static/pgq.js)."""
    web = web_of(request)
    data = await web.overview.get()
    return await web.render(request, "_overview_live.html", ov=data, ch=charts(data.series))


async def entrypoint(request: Request) -> Response:
    web = web_of(request)
    name = request.query_params.get("name", "")
    state = request.query_params.get("state", "queued")
    after = request.query_params.get("after") or None
    if state not in STATES:
        raise BadInput(f"unknown state {state!r}: one of {', '.join(STATES)}")
    async with web.pool.admin() as admin:
        rows = await admin.metrics([name])
        series = await admin.metrics_series([name])
        configs = await admin.entrypoint_config(name)
        page = await admin.list_jobs(name, state, after=after, page_size=web.config.page_size)
    if not rows and not configs:
        raise HTTPException(404, f"no entrypoint {name!r}")
    return await web.render(
        request,
        "entrypoint.html",
        name=name,
        metric=rows[0] if rows else None,
        ch=charts(series) if series else None,
        config=configs[0] if configs else None,
        state=state,
        states=STATES,
        jobs=page.jobs,
        after=after,
        next_cursor=page.next_cursor,
    )


async def job(request: Request) -> Response:
    web = web_of(request)
    try:
        job_id = int(request.path_params["job_id"])
    except ValueError:
        raise HTTPException(404, f"no job {request.path_params['job_id']!r}") from None
    async with web.pool.admin() as admin:
        info = await admin.job(job_id)
        graph = await admin.workflow(job_id) if info is not None else []
    if info is None:
        raise HTTPException(404, f"no job {job_id} (never enqueued, or pruned from history)")
    return await web.render(
        request,
        "job.html",
        job=info,
        attempts=_attempts(info),
        workflow=graph,
        drawing=draw(graph, job_id),
        max_drawn=MAX_DRAWN,
    )


def _attempts(info: Any) -> list[dict[str, Any]]:
    """The failed attempts of ``pgq.job``'s ``errors`` column, oldest first, as stored."""
    attempts = []
    for entry in info.errors or []:
        if not isinstance(entry, dict):
            attempts.append({"attempt": None, "at": None, "details": entry})
            continue
        details = entry.get("details")
        attempts.append(
            {
                "attempt": entry.get("attempt"),
                "at": entry.get("at"),
                "details": details,
                "error": details.get("error") if isinstance(details, dict) else None,
                "message": details.get("message") if isinstance(details, dict) else None,
                "traceback": details.get("traceback") if isinstance(details, dict) else None,
            }
        )
    return attempts


async def failed(request: Request) -> Response:
    web = web_of(request)
    params = request.query_params
    filt = failed_filter(params)
    after = params.get("after") or None
    async with web.pool.admin() as admin:
        page = await admin.find_history(**filt, after=after, page_size=web.config.page_size)
    entrypoints = [m.entrypoint for m in (await web.overview.get()).metrics]
    return await web.render(
        request,
        "failed.html",
        jobs=page.jobs,
        next_cursor=page.next_cursor,
        filt=filt,
        raw={k: params.get(k, "") for k in ("entrypoint", "status", "since", "until", "error")},
        entrypoints=entrypoints,
        after=after,
    )


async def schedules(request: Request) -> Response:
    web = web_of(request)
    async with web.pool.admin() as admin:
        rows = await admin.schedules()
    return await web.render(request, "schedules.html", schedules=rows)


async def search(request: Request) -> Response:
    """A job id opens the job; anything else is looked up as a dedupe key."""
    web = web_of(request)
    q = request.query_params.get("q", "").strip()
    if not q:
        return RedirectResponse("/", status_code=303)
    digits = q.removeprefix("#")
    if digits.isdigit() and len(digits) <= 18:
        async with web.pool.admin() as admin:
            found = await admin.job(int(digits))
        if found is not None:
            return RedirectResponse(f"/jobs/{found.id}", status_code=303)
    async with web.pool.admin() as admin:
        jobs = await admin.find_by_dedupe_key(q)
    if len(jobs) == 1:
        return RedirectResponse(f"/jobs/{jobs[0].id}", status_code=303)
    return await web.render(request, "search.html", q=q, jobs=jobs)


async def recent_actions(request: Request) -> Response:
    """The actions taken through this process, newest first (the log has them all)."""
    web = web_of(request)
    return await web.render(request, "actions.html", taken=list(reversed(web.recent)))


async def login_page(request: Request) -> Response:
    web = web_of(request)
    return await web.render(request, "login.html", next=request.query_params.get("next", "/"))


async def _error(request: Request, status: int, title: str, message: str) -> Response:
    """An error page that needs no database."""
    web = web_of(request)
    html = web.templates.get_template("error.html").render(
        request=request,
        path=request.url.path,
        here=request.url.path,
        session=None,
        csrf="",
        token_configured=bool(web.config.token),
        privileges=None,
        can=lambda action: False,
        flash=None,
        refresh=web.config.refresh,
        status=status,
        title=title,
        message=message,
    )
    return HTMLResponse(html, status_code=status)


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    title = {404: "Not found", 405: "Method not allowed"}.get(exc.status_code, "Error")
    return await _error(request, exc.status_code, title, str(exc.detail))


async def _bad_input(request: Request, exc: Exception) -> Response:
    return await _error(request, 400, "Bad request", one_line(exc))


async def _setup_error(request: Request, exc: Exception) -> Response:
    status = 403 if isinstance(exc, PrivilegeMissing) else 500
    return await _error(request, status, "The database refused", one_line(exc))


async def _database_down(request: Request, exc: Exception) -> Response:
    return await _error(request, 503, "Database unavailable", one_line(exc))


EXCEPTION_HANDLERS: dict[Any, Any] = {
    HTTPException: _http_error,
    BadInput: _bad_input,
    PgqError: _bad_input,
    SetupError: _setup_error,
    psycopg.OperationalError: _database_down,  # ServerReadOnly among them (a standby)
    # a read-only answer (SQLSTATE 25006): the handle closed its connection (the rule of
    # pgq_thin.connection), the next request connects again
    psycopg.errors.ReadOnlySqlTransaction: _database_down,
}

ROUTES = [
    Route("/", overview),
    Route("/live/overview", overview_live),
    Route("/entrypoint", entrypoint),
    Route("/jobs/{job_id}", job),
    Route("/failed", failed),
    Route("/schedules", schedules),
    Route("/search", search),
    Route("/actions", recent_actions),
    Route("/login", login_page),
]
