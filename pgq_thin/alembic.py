"""pgq in an application's own Alembic history: one call in one of its revisions.

::

    # migrations/versions/0002_pgq.py of the application
    from pgq_thin.alembic import downgrade_pgq, upgrade_pgq

    revision = "0002_pgq"
    down_revision = "0001_orders"

    def upgrade():
        upgrade_pgq("0002")        # pgq's revision this app revision installs (pinned)

    def downgrade():
        downgrade_pgq()            # drops schema pgq (the roles stay)

:func:`upgrade_pgq` runs pgq's pending migration files **inside the transaction of the
migration that calls it**, on the connection Alembic gives the revision (``op.get_bind()``),
whatever its driver (psycopg 3 or psycopg2), and records pgq's revision in
``pgq.alembic_version`` (pgq's own version table: the application's ``alembic_version`` only
ever holds the application's revisions). So a later revision that fails rolls back the
application's changes and pgq's together, and the rerun starts from where the database really
is. ``pgq-thin install`` and :func:`pgq_thin.migrate.upgrade` read the same version table and
take over from it (a no-op when it is current).

Offline (``alembic upgrade head --sql``) the call writes pgq's SQL into the script: the
guard, every migration file verbatim, the version row, and a check that stops the script
(changing nothing) when pgq is not at the revision the script was written for. Offline there
is no database to ask, so that revision is what the earlier calls of the same run wrote, and
none (a database without pgq) for the first.

Pin the revision: an app revision written against pgq ``0002`` keeps installing ``0002`` after
a newer package ships ``0003``, so the history means the same on every machine. When you move
to a package with new pgq migrations, add an app revision calling ``upgrade_pgq("0003")``
(``pgq-thin version`` names the newest; ``"head"`` follows the installed package). Its
``downgrade`` should do nothing: pgq's migrations are forward-only, and a released SQL contract
stays backward compatible (CHANGELOG.md, "Version policy").

Why this rather than pgq's revisions shipped as an Alembic branch of the application: a
branch would put pgq's revision ids into the application's ``alembic_version`` and its
revision graph (with ``version_locations`` and ``depends_on`` in every application), and the
transaction boundaries would still be the application's; one call keeps pgq's history in its
own table, shared with ``pgq-thin install``, and needs nothing configured.
"""

from __future__ import annotations

from typing import Any

from alembic import op

from pgq_thin import migrate

__all__ = ["downgrade_pgq", "upgrade_pgq"]

_OFFLINE_KEY = "pgq_thin_revision"  # where an offline run remembers the revision it wrote


def upgrade_pgq(revision: str = "head", *, lock_timeout: float = migrate.LOCK_TIMEOUT) -> None:
    """Install schema ``pgq`` or upgrade it to ``revision``, in the current migration's
    transaction (see the module docstring). Call it from a revision's ``upgrade()``."""
    context = op.get_context()
    if context.as_sql:
        opts: dict[str, Any] = context.opts
        start = opts.get(_OFFLINE_KEY)
        target = migrate.head() if revision == "head" else revision
        if start == target:
            return
        context.impl.static_output(migrate.script_body(start, target))
        opts[_OFFLINE_KEY] = target
        return
    migrate.upgrade_in_transaction(op.get_bind(), revision, lock_timeout=lock_timeout)


def downgrade_pgq(*, lock_timeout: float = migrate.LOCK_TIMEOUT) -> None:
    """Drop schema ``pgq`` and everything in it (every job and its history) in the current
    migration's transaction; the roles stay. Call it from the ``downgrade()`` of the revision
    that first called :func:`upgrade_pgq`."""
    context = op.get_context()
    if context.as_sql:
        context.impl.static_output(migrate.SCRIPT_DROP_SCHEMA)
        context.opts.pop(_OFFLINE_KEY, None)
        return
    migrate.uninstall_in_transaction(op.get_bind(), lock_timeout=lock_timeout)
