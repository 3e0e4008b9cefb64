"""recurring payments and their charges

Revision ID: 0012
Revises: 0011
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "recurring_payments",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("merchant_id", _ID, nullable=False),
        sa.Column("endpoint_id", _ID, nullable=False),
        sa.Column("client_orderid", sa.String(128), nullable=True),
        sa.Column("card_id", _ID, nullable=False),
        sa.Column("card_ref_id", sa.BigInteger(), nullable=True),
        sa.Column("origin_card_ref_id", sa.BigInteger(), nullable=True),
        sa.Column("amount", sa.BigInteger(), nullable=True),
        sa.Column("currency", sa.String(3), nullable=True),
        sa.Column("order_desc", sa.Text(), nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("server_callback_url", sa.Text(), nullable=True),
        sa.Column("notify_url", sa.Text(), nullable=True),
        sa.Column("merchant_data", sa.Text(), nullable=True),
        sa.Column("request_fingerprint", sa.String(64), nullable=True),
        sa.Column("period", sa.String(8), nullable=True),
        sa.Column("interval", sa.Integer(), nullable=True),
        sa.Column("start_date", sa.String(10), nullable=True),
        sa.Column("finish_date", sa.String(10), nullable=True),
        sa.Column("max_count", sa.Integer(), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("charges_made", sa.Integer(), nullable=False),
        sa.Column("charges_approved", sa.Integer(), nullable=False),
        sa.Column("charges_declined", sa.Integer(), nullable=False),
        sa.Column("next_charge_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"]),
        sa.ForeignKeyConstraint(["endpoint_id"], ["endpoints.id"]),
        sa.ForeignKeyConstraint(["card_id"], ["cards.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("origin_card_ref_id"),
        sa.UniqueConstraint("endpoint_id", "client_orderid", name="uq_recurring_payments_endpoint_client_orderid"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_recurring_payments_due", "recurring_payments", ["next_charge_at_ms"])
    op.create_index("ix_recurring_payments_merchant", "recurring_payments", ["merchant_id", "id"])
    op.create_table(
        "recurring_charges",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("recurring_payment_id", _ID, nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("try_number", sa.Integer(), nullable=False),
        sa.Column("order_id", _ID, nullable=True),
        sa.Column("due_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("retry_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["recurring_payment_id"], ["recurring_payments.id"]),
        sa.ForeignKeyConstraint(["order_id"], ["orders.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("recurring_payment_id", "number", "try_number", name="uq_recurring_charges_try"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_recurring_charges_state", "recurring_charges", ["state", "retry_at_ms"])
    # A nullable column without a default: SQLite and PostgreSQL add it without rewriting the table.
    op.add_column("orders", sa.Column("recurring_payment_id", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("orders", schema=None) as batch_op:
        batch_op.drop_column("recurring_payment_id")
    op.drop_index("ix_recurring_charges_state", table_name="recurring_charges")
    op.drop_table("recurring_charges")
    op.drop_index("ix_recurring_payments_merchant", table_name="recurring_payments")
    op.drop_index("ix_recurring_payments_due", table_name="recurring_payments")
    op.drop_table("recurring_payments")
