"""Alembic env.py for pgq_thin: runs on the connection handed over by pgq_thin.migrate."""

from alembic import context

from pgq_thin.migrations import VERSION_SCHEMA, VERSION_TABLE

connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError(
        "pgq_thin migrations run through pgq_thin.migrate.upgrade() or `pgq-thin install`, "
        "not through the alembic command line"
    )

context.configure(
    connection=connection,
    version_table=VERSION_TABLE,
    version_table_schema=VERSION_SCHEMA,
    transaction_per_migration=False,
)
with context.begin_transaction():
    context.run_migrations()
