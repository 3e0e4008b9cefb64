"""each gateway process's view of the ISO 8583 links it opened, for operators reading them from anywhere

Revision ID: 0025
Revises: 0024
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "acquirer_link_states",
        sa.Column("connection_id", _ID, nullable=False),
        sa.Column("process", sa.String(255), nullable=False),
        sa.Column("sockets", sa.Integer(), nullable=False),
        sa.Column("signed_on", sa.Integer(), nullable=False),
        sa.Column("in_flight", sa.Integer(), nullable=False),
        sa.Column("last_error", sa.String(300), nullable=True),
        sa.Column("last_error_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["connection_id"], ["acquirer_connections.id"]),
        sa.PrimaryKeyConstraint("connection_id", "process"),
    )


def downgrade() -> None:
    op.drop_table("acquirer_link_states")
