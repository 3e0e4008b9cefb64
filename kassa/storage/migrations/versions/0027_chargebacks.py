"""chargebacks: the disputes behind chargeback transactions, and transactions by the acquirer's reference

Revision ID: 0027
Revises: 0026
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "chargebacks",
        sa.Column("id", _ID, nullable=False, autoincrement=True),
        sa.Column("order_id", _ID, nullable=False),
        sa.Column("transaction_id", _ID, nullable=False),
        sa.Column("merchant_id", _ID, nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("reason_code", sa.String(8), nullable=False),
        sa.Column("disputed_on", sa.String(10), nullable=False),
        sa.Column("dedup_key", sa.String(128), nullable=False),
        sa.Column("state", sa.String(8), nullable=False),
        sa.Column("opened_by", sa.String(254), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("closed_by", sa.String(254), nullable=True),
        sa.Column("closed_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("adjustment_id", _ID, nullable=True),
        sa.ForeignKeyConstraint(["order_id"], ["orders.id"]),
        sa.ForeignKeyConstraint(["transaction_id"], ["transactions.id"]),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"]),
        sa.ForeignKeyConstraint(["adjustment_id"], ["balance_adjustments.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("transaction_id"),
        sa.UniqueConstraint("dedup_key"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_chargebacks_state", "chargebacks", ["state", "disputed_on", "id"])
    op.create_index("ix_transactions_processor_rrn", "transactions", ["processor_rrn"])


def downgrade() -> None:
    op.drop_index("ix_transactions_processor_rrn", table_name="transactions")
    op.drop_index("ix_chargebacks_state", table_name="chargebacks")
    op.drop_table("chargebacks")
