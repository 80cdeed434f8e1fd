"""What every revision file does: run one packaged SQL migration file verbatim."""

from alembic import op

from pgq_thin import sqlfiles


def apply(revision: str) -> None:
    """Run ``sql/migrations/<revision>_*.sql`` on the migration connection, exactly as written.

    ``exec_driver_sql`` with ``no_parameters`` hands the text to the driver untouched: no
    ``:name`` bind parsing (``op.execute`` would mangle ``:word``) and no ``%`` placeholder
    parsing, so PL/pgSQL such as ``RAISE ... '%'`` arrives intact.
    """
    text = sqlfiles.migration(revision).read()
    op.get_bind().exec_driver_sql(text, execution_options={"no_parameters": True})


def refuse_downgrade(revision: str) -> None:
    """SQL migrations are forward-only; removing pgq-thin is ``pgq_thin.migrate.uninstall``."""
    raise NotImplementedError(
        f"revision {revision} cannot be downgraded: pgq-thin migrations are forward-only; "
        "use pgq_thin.migrate.uninstall() to remove schema pgq"
    )
