"""what the gateway sent each acquirer over ISO 8583 and how it ended, for reversals and advices repeated
across restarts and for the order's tries; and each connection's next STANs

Revision ID: 0023
Revises: 0022
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "acquirer_messages",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("transaction_id", _ID, nullable=False),
        sa.Column("connection_id", _ID, nullable=False),
        sa.Column("mti", sa.String(4), nullable=False),
        sa.Column("processing_code", sa.String(6), nullable=False),
        sa.Column("stan", sa.String(6), nullable=False),
        sa.Column("sent_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("response_code", sa.String(2), nullable=True),
        sa.Column("repeats", sa.Integer(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["transaction_id"], ["transactions.id"]),
        sa.ForeignKeyConstraint(["connection_id"], ["acquirer_connections.id"]),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_acquirer_messages_transaction", "acquirer_messages", ["transaction_id", "id"])
    op.create_index("ix_acquirer_messages_state", "acquirer_messages", ["state", "connection_id"])
    op.create_table(
        "acquirer_stans",
        sa.Column("connection_id", _ID, nullable=False),
        sa.Column("next", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["connection_id"], ["acquirer_connections.id"]),
        sa.PrimaryKeyConstraint("connection_id"),
    )


def downgrade() -> None:
    op.drop_table("acquirer_stans")
    op.drop_index("ix_acquirer_messages_state", "acquirer_messages")
    op.drop_index("ix_acquirer_messages_transaction", "acquirer_messages")
    op.drop_table("acquirer_messages")
