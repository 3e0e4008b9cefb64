"""sandbox and live money apart: each order's mode, each ledger entry's, a balance per mode

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Adding a column with a constant default rewrites no row on either database. An order made before
    # takes its endpoint's mode as it is now: the best there is to know.
    op.add_column("orders", sa.Column("mode", sa.String(16), nullable=False, server_default="sandbox"))
    op.execute("UPDATE orders SET mode = 'live' WHERE endpoint_id IN (SELECT id FROM endpoints WHERE mode = 'live')")
    op.add_column("ledger_entries", sa.Column("mode", sa.String(16), nullable=False, server_default="sandbox"))
    op.execute("UPDATE ledger_entries SET mode = 'live' WHERE order_id IN (SELECT id FROM orders WHERE mode = 'live')")
    # A balance is the sums of its ledger's accounts, so the balances per mode are summed anew from it.
    op.drop_table("balances")
    _create_balances(with_mode=True)
    op.execute(
        "INSERT INTO balances (merchant_id, currency, mode, available, reserved, updated_at_ms)"
        " SELECT merchant_id, currency, mode,"
        " SUM(CASE WHEN account = 'settled' THEN amount ELSE 0 END),"
        " SUM(CASE WHEN account = 'reserved' THEN amount ELSE 0 END), MAX(created_at_ms)"
        " FROM ledger_entries WHERE account IN ('settled', 'reserved') GROUP BY merchant_id, currency, mode"
    )


def downgrade() -> None:
    op.drop_table("balances")
    _create_balances(with_mode=False)
    op.execute(
        "INSERT INTO balances (merchant_id, currency, available, reserved, updated_at_ms)"
        " SELECT merchant_id, currency,"
        " SUM(CASE WHEN account = 'settled' THEN amount ELSE 0 END),"
        " SUM(CASE WHEN account = 'reserved' THEN amount ELSE 0 END), MAX(created_at_ms)"
        " FROM ledger_entries WHERE account IN ('settled', 'reserved') GROUP BY merchant_id, currency"
    )
    with op.batch_alter_table("ledger_entries") as batch:
        batch.drop_column("mode")
    with op.batch_alter_table("orders") as batch:
        batch.drop_column("mode")


def _create_balances(*, with_mode: bool) -> None:
    mode = [sa.Column("mode", sa.String(16), nullable=False)] if with_mode else []
    op.create_table(
        "balances",
        sa.Column("merchant_id", _ID, nullable=False),
        sa.Column("currency", sa.String(3), nullable=False),
        *mode,
        sa.Column("available", sa.BigInteger(), nullable=False),
        sa.Column("reserved", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"]),
        sa.PrimaryKeyConstraint("merchant_id", "currency", *(["mode"] if with_mode else [])),
    )
