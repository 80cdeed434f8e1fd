"""The Alembic environment shipped with pgq_thin.

Revisions are derived from the SQL files: every ``sql/migrations/NNNN_slug.sql`` is one Alembic
revision with id ``NNNN`` whose parent is the file before it, and whose upgrade runs the file
verbatim. Adding a migration is adding the SQL file; there are no revision scripts to write
(:class:`SqlScriptDirectory` builds them in memory instead of reading ``versions/*.py``).

Alembic records the installed revision in ``pgq.alembic_version``, inside our own schema, so
the host application's own Alembic history (``public.alembic_version``) is never touched.
Run these migrations through :mod:`pgq_thin.migrate` (or ``pgq-thin install``), which takes
the advisory lock and creates schema ``pgq`` first; the ``alembic`` command line is not
supported.
"""

from __future__ import annotations

import types
from collections.abc import Iterator
from pathlib import Path

from alembic import op
from alembic.script import Script, ScriptDirectory

from pgq_thin import sqlfiles

VERSION_SCHEMA = "pgq"
VERSION_TABLE = "alembic_version"


class SqlScriptDirectory(ScriptDirectory):
    """A ScriptDirectory whose revisions are the packaged SQL migration files."""

    @classmethod
    def packaged(cls) -> SqlScriptDirectory:
        """The environment shipped in this package (``env.py`` next to this file)."""
        return cls(str(Path(__file__).resolve().parent))

    def _load_revisions(self) -> Iterator[Script]:
        down: str | None = None
        for migration in sqlfiles.migrations():
            yield Script(_revision_module(migration, down), migration.revision, migration.path)
            down = migration.revision


def apply(revision: str) -> None:
    """Run ``sql/migrations/<revision>_*.sql`` on the migration connection, exactly as written.

    ``exec_driver_sql`` with ``no_parameters`` hands the text to the driver untouched: no
    ``:name`` bind parsing (``op.execute`` would mangle ``:word``) and no ``%`` placeholder
    parsing, so PL/pgSQL such as ``RAISE ... '%'`` arrives intact.
    """
    text = sqlfiles.migration(revision).read()
    op.get_bind().exec_driver_sql(text, execution_options={"no_parameters": True})


def _revision_module(migration: sqlfiles.Migration, down: str | None) -> types.ModuleType:
    """The in-memory equivalent of a revision script for one SQL migration file."""
    module = types.ModuleType(f"pgq_thin.migrations.revision_{migration.revision}")
    module.__doc__ = f"{migration.name}: applied verbatim."
    revision = migration.revision

    def upgrade() -> None:
        apply(revision)

    def downgrade() -> None:
        raise NotImplementedError(
            f"revision {revision} cannot be downgraded: pgq-thin migrations are forward-only; "
            "use pgq_thin.migrate.uninstall() to remove schema pgq"
        )

    module.__dict__.update(
        revision=revision,
        down_revision=down,
        branch_labels=None,
        depends_on=None,
        upgrade=upgrade,
        downgrade=downgrade,
    )
    return module
