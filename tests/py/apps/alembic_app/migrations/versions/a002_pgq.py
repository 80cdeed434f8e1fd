"""pgq, installed by the application's history, in the migration's transaction.

$APP_PGQ_WAY=nested instead calls pgq_thin.migrate.upgrade() on a connection of its own from
inside this revision (the way that used to end the run with KeyError: 'config').
"""

import os

from alembic import op

from pgq_thin import migrate
from pgq_thin.alembic import downgrade_pgq, upgrade_pgq

revision = "a002"
down_revision = "a001"


def upgrade() -> None:
    if os.environ.get("APP_PGQ_WAY") == "nested":
        with op.get_context().autocommit_block():
            migrate.upgrade(os.environ["APP_DSN"])
        return
    upgrade_pgq("0002")


def downgrade() -> None:
    downgrade_pgq()
