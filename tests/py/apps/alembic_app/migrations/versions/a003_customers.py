"""An application revision after pgq's: a table whose rows enqueue jobs in the same SQL."""

import sqlalchemy as sa
from alembic import op

revision = "a003"
down_revision = "a002"


def upgrade() -> None:
    op.create_table("customers", sa.Column("id", sa.Integer, primary_key=True))


def downgrade() -> None:
    op.drop_table("customers")
