"""Which database to talk to: an explicit DSN, else ``PGQ_DSN``, else libpq's ``PG*`` variables."""

from __future__ import annotations

import os
from collections.abc import Mapping

ENV_VAR = "PGQ_DSN"


def resolve_dsn(explicit: str | None = None, environ: Mapping[str, str] | None = None) -> str:
    """The DSN to connect with.

    An empty string is a valid libpq DSN: libpq then reads ``PGHOST``, ``PGPORT``,
    ``PGDATABASE``, ``PGUSER``, ``PGPASSWORD``, ``PGSERVICE`` ... and its own defaults.
    """
    if explicit:
        return explicit
    env = os.environ if environ is None else environ
    return env.get(ENV_VAR, "")
