"""What a request says, parsed: the fields of a query string or a form, checked. A value this
module cannot use raises :class:`BadInput`, shown to the user with status 400 (the pages'
error handler) or as the message of a refused action."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from starlette.datastructures import FormData

__all__ = ["MAX_IDS", "BadInput", "failed_filter", "form_text", "job_ids", "parse_time", "required"]

HISTORY_STATES = ("failed", "canceled")
MAX_IDS = 1000  # jobs one action may name


class BadInput(ValueError):
    """A query string or form value this page cannot use; shown to the user, status 400."""


def parse_time(text: str | None, what: str) -> datetime | None:
    """A time typed in a form (``YYYY-MM-DD[THH:MM[:SS]]``, UTC unless it says otherwise)."""
    if text is None or not text.strip():
        return None
    try:
        value = datetime.fromisoformat(text.strip().replace(" ", "T"))
    except ValueError:
        raise BadInput(f"{what} is not a time (YYYY-MM-DD HH:MM:SS, UTC): {text!r}") from None
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def failed_filter(params: Any) -> dict[str, Any]:
    """The failed-jobs filter of a query string or form: entrypoint, status, since, until, error."""
    status = params.get("status") or "failed"
    if status not in HISTORY_STATES:
        raise BadInput(f"unknown status {status!r}: failed or canceled")
    return {
        "entrypoint": params.get("entrypoint") or None,
        "statuses": [status],
        "since": parse_time(params.get("since"), "since"),
        "until": parse_time(params.get("until"), "until"),
        "error": params.get("error") or None,
    }


def form_text(form: FormData, name: str) -> str | None:
    """The text field ``name`` of a form (None: missing, or a file)."""
    value = form.get(name)
    return value if isinstance(value, str) else None


def job_ids(form: FormData) -> list[int]:
    """The selected jobs of a form (``ids``, repeated): at least one, at most :data:`MAX_IDS`."""
    raw = [v for v in form.getlist("ids") if isinstance(v, str)]
    if not raw:
        raise BadInput("no job selected")
    if len(raw) > MAX_IDS:
        raise BadInput(f"at most {MAX_IDS} jobs at once, got {len(raw)}")
    try:
        return [int(v) for v in raw]
    except ValueError:
        raise BadInput(f"job ids must be numbers: {raw!r}") from None


def required(form: FormData, name: str) -> str:
    """The text field ``name``, stripped; missing or blank: :class:`BadInput`."""
    value = (form_text(form, name) or "").strip()
    if not value:
        raise BadInput(f"{name} is required")
    return value
