"""A revision that fails when $APP_FAIL is set, after changing something."""

import os

import sqlalchemy as sa
from alembic import op

revision = "a004"
down_revision = "a003"


def upgrade() -> None:
    op.add_column("orders", sa.Column("note", sa.Text))
    if os.environ.get("APP_FAIL"):
        op.execute("SELECT 1 / 0")


def downgrade() -> None:
    op.drop_column("orders", "note")
