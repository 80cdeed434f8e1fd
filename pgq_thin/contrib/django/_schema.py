"""What this app's migrations run: pgq's SQL files through Django's schema editor connection,
in the migration's transaction (:func:`pgq_thin.migrate.upgrade_with`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pgq_thin import migrate


def _execute(schema_editor: Any) -> migrate.Execute:
    connection = schema_editor.connection

    def execute(statement: str, params: tuple[Any, ...] | None) -> list[tuple[Any, ...]]:
        with connection.cursor() as cursor:
            cursor.execute(statement, params)
            return [tuple(row) for row in cursor.fetchall()] if cursor.description else []

    return execute


def upgrade(revision: str) -> Callable[[Any, Any], None]:
    """The ``RunPython`` code installing or upgrading pgq to ``revision``."""

    def forward(apps: Any, schema_editor: Any) -> None:
        if schema_editor.connection.vendor != "postgresql":
            raise RuntimeError("pgq_thin.contrib.django needs PostgreSQL")
        migrate.upgrade_with(_execute(schema_editor), revision)

    return forward


def downgrade(apps: Any, schema_editor: Any) -> None:
    """Unapplying the first migration drops schema ``pgq`` (every job and its history); the
    roles stay."""
    migrate.uninstall_with(_execute(schema_editor))
