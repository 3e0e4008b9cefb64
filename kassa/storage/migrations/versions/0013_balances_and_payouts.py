"""merchant balances, operator adjustments and payout destinations

Revision ID: 0013
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "balances",
        sa.Column("merchant_id", _ID, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("available", sa.BigInteger(), nullable=False),
        sa.Column("reserved", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"]),
        sa.PrimaryKeyConstraint("merchant_id", "currency"),
    )
    # The settled money of orders settled before payouts existed is available to pay out.
    op.execute(
        "INSERT INTO balances (merchant_id, currency, available, reserved, updated_at_ms)"
        " SELECT merchant_id, currency, SUM(amount), 0, MAX(created_at_ms) FROM ledger_entries"
        " WHERE account = 'settled' GROUP BY merchant_id, currency"
    )
    op.create_table(
        "balance_adjustments",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("merchant_id", _ID, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"]),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    # An adjustment's entries belong to no order. PostgreSQL drops the NOT NULL in place; SQLite copies
    # the table (Alembic's batch mode).
    with op.batch_alter_table("ledger_entries") as batch_op:
        batch_op.alter_column("order_id", existing_type=_ID, nullable=True)
        batch_op.add_column(sa.Column("adjustment_id", _ID, nullable=True))
        batch_op.create_foreign_key("fk_ledger_entries_adjustment", "balance_adjustments", ["adjustment_id"], ["id"])
    op.create_table(
        "payout_destinations",
        sa.Column("order_id", _ID, nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("details_ciphertext", sa.LargeBinary(), nullable=False),
        sa.Column("masked", sa.String(64), nullable=False),
        sa.Column("recipient_name", sa.String(128)),
        sa.ForeignKeyConstraint(["order_id"], ["orders.id"]),
        sa.PrimaryKeyConstraint("order_id"),
    )


def downgrade() -> None:
    op.drop_table("payout_destinations")
    with op.batch_alter_table("ledger_entries") as batch_op:
        batch_op.drop_constraint("fk_ledger_entries_adjustment", type_="foreignkey")
        batch_op.drop_column("adjustment_id")
        batch_op.alter_column("order_id", existing_type=_ID, nullable=False)
    op.drop_table("balance_adjustments")
    op.drop_table("balances")
