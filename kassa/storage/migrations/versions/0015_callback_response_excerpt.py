"""the start of the merchant's answer to each callback attempt, for operators

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("callback_attempts", sa.Column("response_excerpt", sa.Text(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("callback_attempts") as batch:
        batch.drop_column("response_excerpt")
