"""The application's first table."""

import sqlalchemy as sa
from alembic import op

revision = "a001"
down_revision = None


def upgrade() -> None:
    op.create_table(
        "orders",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("item", sa.Text, nullable=False),
    )


def downgrade() -> None:
    op.drop_table("orders")
