"""The actions (POST only): sign in and out, pause/resume, cancel, requeue, delete, schedules.

Every action goes through :func:`_authorize`, in this order: a ``POST`` from another site
(``Origin`` or ``Sec-Fetch-Site``) is refused; a server started without a token refuses
everything; the caller must hold the token (a signed-in session whose form carries its CSRF
token, or ``Authorization: Bearer TOKEN``); the database role must be allowed to call the
function (:meth:`~pgq_thin.admin.AsyncAdmin.privileges`). Then it is one admin API call
(or a few, for "requeue all failed since"), logged on logger ``pgq_thin.web.actions`` with
who did it and from where, refusals included. A browser is sent back to the page it came
from with a message; a bearer caller gets JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from pgq_thin.admin import AsyncAdmin
from pgq_thin.errors import PgqError, PrivilegeMissing, one_line
from pgq_thin.web.data import Taken
from pgq_thin.web.forms import BadInput, failed_filter, form_text, job_ids, parse_time, required
from pgq_thin.web.security import (
    FLASH_COOKIE,
    SESSION_COOKIE,
    SESSION_SECONDS,
    check_token,
    valid_actor,
)
from pgq_thin.web.state import web_of

__all__ = ["ROUTES"]

log = logging.getLogger("pgq_thin.web.actions")

BULK = 10000  # jobs per call of requeue_history / delete_history

Act = Callable[[AsyncAdmin, FormData], Awaitable[str]]


def safe_next(value: Any) -> str:
    """Where to go back to: a path of this site, never another one."""
    text = str(value or "/")
    if not text.startswith("/") or text.startswith("//") or "\\" in text:
        return "/"
    return text


def _address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def _cross_site(request: Request) -> bool:
    origin = request.headers.get("origin")
    if origin is not None and origin != f"{request.url.scheme}://{request.url.netloc}":
        return True
    return request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none")


def _bearer(request: Request) -> str | None:
    scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
    return credentials.strip() if scheme.lower() == "bearer" else None


async def _authorize(
    request: Request, form: FormData, privilege: str
) -> tuple[str | None, str | None]:
    """``(actor, None)`` when the action may run, else ``(actor or None, why not)``."""
    web = web_of(request)
    if _cross_site(request):
        return None, "a POST from another site"
    if not web.config.token:
        return None, "the dashboard is read-only (started without --token or PGQ_WEB_TOKEN)"
    bearer = _bearer(request)
    if bearer is not None:
        if not check_token(web.config.token, bearer):
            return None, "wrong token"
        actor = valid_actor(request.headers.get("x-pgq-actor", "")) or "bearer token"
    else:
        session = web.session(request)
        if session is None:
            return None, "not signed in with the token"
        if not web.signer.check_csrf(session, form_text(form, "csrf")):
            return session.actor, "the form's CSRF token does not match the session"
        actor = session.actor
    if not getattr(await web.privileges(), privilege, False):
        return actor, f"the database role may not call pgq.{privilege}"
    return actor, None


def _done(request: Request, form: FormData, kind: str, message: str, status: int) -> Response:
    if _bearer(request) is not None:
        return JSONResponse({"ok": kind == "ok", "message": message}, status_code=status)
    response = RedirectResponse(safe_next(form_text(form, "next")), status_code=303)
    web = web_of(request)
    response.set_cookie(
        FLASH_COOKIE, web.signer.sign("flash", [kind, message]), httponly=True, samesite="strict"
    )
    return response


def action(name: str, privilege: str, act: Act) -> Callable[[Request], Awaitable[Response]]:
    """An endpoint running ``act`` once :func:`_authorize` allows it, logging the outcome."""

    async def endpoint(request: Request) -> Response:
        web = web_of(request)
        form = await request.form()
        actor, refusal = await _authorize(request, form, privilege)
        where = _address(request)
        if refusal is not None:
            who = actor or "anonymous"
            log.warning("web action %s refused (by %s from %s): %s", name, who, where, refusal)
            _remember(request, who, name, "refused", refusal)
            return await _refused(request, refusal)
        try:
            async with web.pool.admin() as admin:
                message = await act(admin, form)
        except PrivilegeMissing as err:
            log.warning(
                "web action %s refused by the database (by %s from %s): %s",
                name,
                actor,
                where,
                one_line(err),
            )
            _remember(request, actor, name, "refused", one_line(err))
            return await _refused(request, one_line(err))
        except (PgqError, BadInput) as err:
            log.warning("web action %s failed (by %s from %s): %s", name, actor, where, err)
            _remember(request, actor, name, "failed", one_line(err))
            return _done(request, form, "error", one_line(err), 400)
        web.overview.invalidate()
        log.info("web action %s by %s from %s: %s", name, actor, where, message)
        _remember(request, actor, name, "ok", message)
        return _done(request, form, "ok", message, 200)

    return endpoint


def _remember(request: Request, actor: str | None, name: str, outcome: str, message: str) -> None:
    web_of(request).recent.append(
        Taken(datetime.now(UTC), actor or "anonymous", _address(request), name, outcome, message)
    )


async def _refused(request: Request, reason: str) -> Response:
    if _bearer(request) is not None:
        return JSONResponse({"ok": False, "message": f"refused: {reason}"}, status_code=403)
    web = web_of(request)
    return await web.render(request, "error.html", status=403, title="Refused", message=reason)


# --- the actions: each one admin API call (or a bounded loop of one) -----------------------


async def _pause(admin: AsyncAdmin, form: FormData) -> str:
    name = required(form, "entrypoint")
    await admin.pause([name])
    return f"paused {name}"


async def _resume(admin: AsyncAdmin, form: FormData) -> str:
    name = required(form, "entrypoint")
    await admin.resume([name])
    return f"resumed {name}"


async def _cancel(admin: AsyncAdmin, form: FormData) -> str:
    ids = job_ids(form)
    done = await admin.cancel(ids)
    return f"canceled {len(done)} of {len(ids)} job(s): {_list(done)}"


async def _cancel_workflow(admin: AsyncAdmin, form: FormData) -> str:
    [job_id] = job_ids(form)[:1] or [0]
    done = await admin.cancel_workflow(job_id)
    return f"canceled {len(done)} job(s) of the workflow of job {job_id}: {_list(done)}"


async def _requeue_workflow(admin: AsyncAdmin, form: FormData) -> str:
    [job_id] = job_ids(form)[:1] or [0]
    done = await admin.requeue_workflow(job_id)
    return f"requeued {len(done)} job(s) of the workflow of job {job_id}: {_list(done)}"


async def _requeue(admin: AsyncAdmin, form: FormData) -> str:
    ids = job_ids(form)
    done = await admin.requeue(ids)
    return f"requeued {len(done)} of {len(ids)} job(s): {_list(done)}"


async def _delete(admin: AsyncAdmin, form: FormData) -> str:
    ids = job_ids(form)
    deleted = await admin.delete_jobs(ids)
    return f"deleted {len(deleted)} of {len(ids)} finished job(s): {_list(deleted)}"


async def _requeue_failed_since(admin: AsyncAdmin, form: FormData) -> str:
    name = required(form, "entrypoint")
    since = parse_time(form_text(form, "since"), "since")
    # every: again until nothing more matches, each job at most once (one that fails again
    # meanwhile is not requeued twice)
    ids = await admin.requeue_history(name, since=since, max_jobs=BULK, every=True)
    return f"requeued {len(ids)} failed job(s) of {name}" + (f" since {since}" if since else "")


async def _requeue_matching(admin: AsyncAdmin, form: FormData) -> str:
    ids = await admin.requeue_history(**failed_filter(form), max_jobs=BULK)
    return f"requeued {len(ids)} matching job(s)"


async def _delete_matching(admin: AsyncAdmin, form: FormData) -> str:
    count = await admin.delete_history(**failed_filter(form), max_jobs=BULK)
    return f"deleted {count} matching job(s)"


async def _schedule_add(admin: AsyncAdmin, form: FormData) -> str:
    payload_text = (form_text(form, "payload") or "").strip()
    try:
        payload = json.loads(payload_text) if payload_text else None
    except ValueError as err:
        raise BadInput(f"the payload is not JSON ({err})") from None
    priority_text = (form_text(form, "priority") or "0").strip() or "0"
    if not priority_text.lstrip("-").isdigit():
        raise BadInput(f"priority must be a whole number: {priority_text!r}")
    row = await admin.add_schedule(
        required(form, "name"),
        required(form, "entrypoint"),
        required(form, "cron"),
        payload=payload,
        timezone=(form_text(form, "timezone") or "UTC").strip() or "UTC",
        priority=int(priority_text),
    )
    return f"schedule {row.name} saved: next run {row.next_run_at.isoformat()}"


async def _schedule_remove(admin: AsyncAdmin, form: FormData) -> str:
    name = required(form, "name")
    removed = await admin.remove_schedule(name)
    return f"schedule {name} removed" if removed else f"no schedule {name}"


async def _schedule_fire(admin: AsyncAdmin, form: FormData) -> str:
    name = required(form, "name")
    job_id = await admin.fire_schedule_now(name)
    return f"schedule {name} fired: job {job_id}"


def _list(ids: list[int], most: int = 20) -> str:
    ids = sorted(ids)
    shown = ", ".join(str(i) for i in ids[:most])
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "") if ids else "none"


# --- signing in and out ------------------------------------------------------------------


async def login(request: Request) -> Response:
    web = web_of(request)
    form = await request.form()
    where = _address(request)
    following = safe_next(form_text(form, "next"))
    if _cross_site(request) or not web.config.token:
        reason = "a POST from another site" if web.config.token else "the dashboard is read-only"
        log.warning("web sign-in refused (from %s): %s", where, reason)
        return await _refused(request, reason)
    actor = valid_actor(form_text(form, "who") or "")
    if actor is None or not check_token(web.config.token, form_text(form, "token")):
        log.warning(
            "web sign-in refused (as %r from %s): wrong token or name",
            form_text(form, "who"),
            where,
        )
        await asyncio.sleep(0.5)  # slows guessing down
        return await web.render(
            request,
            "login.html",
            status=403,
            next=following,
            error="Wrong token, or no name (1 to 64 characters, no quotes).",
        )
    _, cookie = web.signer.new_session(actor)
    log.info("web sign-in by %s from %s", actor, where)
    response = RedirectResponse(following, status_code=303)
    response.set_cookie(
        SESSION_COOKIE,
        cookie,
        max_age=SESSION_SECONDS,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",  # served over TLS: never sent in clear
    )
    return response


async def logout(request: Request) -> Response:
    web = web_of(request)
    session = web.session(request)
    if session is not None and not _cross_site(request):
        log.info("web sign-out by %s from %s", session.actor, _address(request))
    response = RedirectResponse("/", status_code=303)
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


def _post(path: str, name: str, privilege: str, act: Act) -> Route:
    return Route(path, action(name, privilege, act), methods=["POST"])


ROUTES = [
    Route("/login", login, methods=["POST"]),
    Route("/logout", logout, methods=["POST"]),
    _post("/actions/pause", "pause", "pause", _pause),
    _post("/actions/resume", "resume", "resume", _resume),
    _post("/actions/cancel", "cancel", "cancel", _cancel),
    _post("/actions/cancel-workflow", "cancel workflow", "cancel", _cancel_workflow),
    _post("/actions/requeue-workflow", "requeue workflow", "requeue", _requeue_workflow),
    _post("/actions/requeue", "requeue", "requeue", _requeue),
    _post("/actions/delete", "delete", "delete_jobs", _delete),
    _post(
        "/actions/requeue-failed", "requeue failed since", "requeue_history", _requeue_failed_since
    ),
    _post("/actions/requeue-matching", "requeue matching", "requeue_history", _requeue_matching),
    _post("/actions/delete-matching", "delete matching", "delete_history", _delete_matching),
    _post("/actions/schedule-add", "add schedule", "schedule", _schedule_add),
    _post("/actions/schedule-remove", "remove schedule", "unschedule", _schedule_remove),
    _post("/actions/schedule-fire", "fire schedule", "fire_schedule_now", _schedule_fire),
]
