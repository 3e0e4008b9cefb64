"""merchant allowed networks

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Nullable, no default: added without rewriting the table; NULL keeps today's meaning (anywhere).
    op.add_column("merchants", sa.Column("allowed_networks", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("merchants", schema=None) as batch_op:
        batch_op.drop_column("allowed_networks")
