"""transactions by stage and type in id order

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # The expiry scan reads open authorizations in batches by id: the index gives them in that order.
    op.create_index("ix_transactions_expiry", "transactions", ["stage", "tx_type", "id"])
    op.drop_index("ix_transactions_stage", table_name="transactions")


def downgrade() -> None:
    op.create_index("ix_transactions_stage", "transactions", ["stage", "tx_type"])
    op.drop_index("ix_transactions_expiry", table_name="transactions")
