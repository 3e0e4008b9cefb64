"""3-D Secure above an amount: the rules a first authorization is above, and their mode on the transaction

Revision ID: 0030
Revises: 0029
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # Nullable and without a default: on PostgreSQL no table rewrite, on SQLite a plain ADD COLUMN.
    op.add_column("transactions", sa.Column("three_ds_rules", sa.String(16), nullable=True))
    op.create_table(
        "risk_three_ds",
        sa.Column("transaction_id", _ID, nullable=False),
        sa.Column("rule_id", _ID, nullable=False),
        sa.ForeignKeyConstraint(["transaction_id"], ["transactions.id"]),
        sa.ForeignKeyConstraint(["rule_id"], ["risk_rules.id"]),
        sa.PrimaryKeyConstraint("transaction_id", "rule_id"),
    )


def downgrade() -> None:
    op.drop_table("risk_three_ds")
    with op.batch_alter_table("transactions") as batch:
        batch.drop_column("three_ds_rules")
