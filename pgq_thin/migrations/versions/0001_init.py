"""Revision 0001: sql/migrations/0001_init.sql (tables, types, roles, grants, functions)."""

from pgq_thin.migrations.sqlrev import apply, refuse_downgrade

revision = "0001"
down_revision: str | None = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    apply(revision)


def downgrade() -> None:
    refuse_downgrade(revision)
