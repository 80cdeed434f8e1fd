"""Logging: the client logs with the stdlib under ``pgq_thin`` (``pgq_thin.worker``,
``pgq_thin.connection``, ``pgq_thin.listener``, ``pgq_thin.scheduler``) and adds structured
fields to its records (``extra=``), so a formatter can emit them as data.

Fields (attributes of the :class:`logging.LogRecord`, present where they apply):

- ``worker_id``: on every record of a worker;
- ``job_id``, ``entrypoint``, ``attempt``, ``max_attempts``: on every record about one job;
- ``outcome`` and ``duration`` (seconds, a float): on the record that ends a job's attempt
  (``successful``, ``failed``, ``retry_after``, ``snoozed``, ``fatal``, ``invalid_payload``,
  ``canceled``, ``aborted``, ``timed_out``);
- ``decided`` (SQL's status: ``retry``, ``snoozed``, ``failed``) and ``retry_in`` (seconds): on
  the record that says what SQL decided for a failed attempt;
- ``taken_over``: on the record of a job taken over from a silent worker;
- ``progress``: on the INFO line a busy worker writes every ``progress_interval`` seconds;
- ``stats``, ``uptime``, ``jobs_per_second``: on the summary a worker logs when it stops.

:class:`JsonFormatter` writes one JSON object per line with the time, level, logger, message,
every such field, and the traceback as ``exc_info`` text. :func:`configure` is what
``pgq-thin run --log-level LEVEL --log-format text|json`` calls; an application configures
logging its own way and may use the formatter::

    handler = logging.StreamHandler()
    handler.setFormatter(pgq_thin.logs.JsonFormatter())
    logging.getLogger("pgq_thin").addHandler(handler)
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import MutableMapping
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["FORMATS", "TEXT_FORMAT", "JsonFormatter", "configure"]

#: The text format of ``pgq-thin run`` (``--log-format text``, the default).
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
FORMATS = ("text", "json")

# The attributes every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "taskName"}


class WorkerLog(logging.LoggerAdapter):  # type: ignore[type-arg]
    """A worker's logger (``pgq_thin.worker``): every record gets the worker's fields, merged
    with its own ``extra=``."""

    def process(
        self, msg: Any, kwargs: MutableMapping[str, Any]
    ) -> tuple[Any, MutableMapping[str, Any]]:
        own = kwargs.get("extra")
        kwargs["extra"] = self.extra if own is None else {**(self.extra or {}), **own}
        return msg, kwargs


def worker_log(worker_id: object) -> WorkerLog:
    """The logger of the worker ``worker_id``: its records carry ``worker_id``."""
    return WorkerLog(logging.getLogger("pgq_thin.worker"), {"worker_id": str(worker_id)})


class JsonFormatter(logging.Formatter):
    """One JSON object per record, on one line: ``time`` (ISO 8601, UTC, milliseconds),
    ``level``, ``logger``, ``message``, the record's ``extra=`` fields, and ``exc_info`` (the
    formatted traceback) when the record carries an exception. Values JSON cannot hold are
    written as their ``str``."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                data[key] = value
        if record.exc_info:
            data["exc_info"] = self.formatException(record.exc_info)
        elif record.exc_text:
            data["exc_info"] = record.exc_text
        if record.stack_info:
            data["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(data, default=str, ensure_ascii=False)


def _level(level: int | str) -> int:
    if isinstance(level, int):
        return level
    try:
        return logging.getLevelNamesMapping()[level.upper()]
    except KeyError:
        raise ValueError(f"unknown log level {level!r}") from None


def configure(
    level: int | str = logging.INFO,
    fmt: str = "text",
    stream: TextIO | None = None,
    others: int | str = logging.WARNING,
) -> None:
    """Log pgq-thin's records (logger ``pgq_thin``) of ``level`` and above to ``stream``
    (stderr), as text or JSON lines, through the root logger's one handler (an application
    that configured logging already keeps its handlers, as with :func:`logging.basicConfig`).
    Other libraries' records (the embedded server's, psycopg's, ...) need ``others``
    (WARNING) or above, and at least ``level``: their INFO lines stay out of a worker's log."""
    if fmt not in FORMATS:
        raise ValueError(f"log format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    ours, theirs = _level(level), _level(others)
    logging.basicConfig(level=max(ours, theirs), handlers=[handler])
    logging.getLogger("pgq_thin").setLevel(ours)
