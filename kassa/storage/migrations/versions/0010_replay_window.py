"""an endpoint's replay window for follow-ups

Revision ID: 0010
Revises: 0009
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Off (0) for every existing endpoint: two equal partial returns may be meant, so only operators turn
    # it on. A constant default adds the column without rewriting the table on SQLite and PostgreSQL.
    op.add_column("endpoints", sa.Column("replay_window_seconds", sa.Integer(), nullable=False, server_default="0"))


def downgrade() -> None:
    with op.batch_alter_table("endpoints", schema=None) as batch_op:
        batch_op.drop_column("replay_window_seconds")
