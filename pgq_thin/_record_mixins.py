"""Derived properties of generated records (``scripts/gen_api.py`` RECORDS names the mixin a
record class inherits): a reading of the record's own columns, never a queue decision."""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any


class FailedJobMixin:
    details: Any

    @property
    def error(self) -> str:
        """The last attempt's error type (``details.error``), or an empty string."""
        return str(self.details.get("error", "")) if isinstance(self.details, dict) else ""

    @property
    def message(self) -> str:
        """The last attempt's error message (``details.message``), or an empty string."""
        return str(self.details.get("message", "")) if isinstance(self.details, dict) else ""


class EntrypointConfigMixin:
    paused_at: datetime | None

    @property
    def paused(self) -> bool:
        """Whether ``pgq.pause`` holds the entrypoint (``paused_at`` is set)."""
        return self.paused_at is not None


class PrivilegesMixin:
    @property
    def actions(self) -> list[str]:
        """The names of the actions allowed (every field but the ``read_`` ones)."""
        fields = dataclasses.fields(self)  # type: ignore[arg-type]
        return [f.name for f in fields if not f.name.startswith("read_") and getattr(self, f.name)]
