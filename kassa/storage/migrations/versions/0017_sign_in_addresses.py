"""what each client address may still try at the console's sign-in

Revision ID: 0017
Revises: 0016
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sign_in_addresses",
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("tat_ms", sa.BigInteger(), nullable=False),
        sa.Column("noted_until_ms", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("address"),
    )
    op.create_index("ix_sign_in_addresses_tat", "sign_in_addresses", ["tat_ms"])


def downgrade() -> None:
    op.drop_table("sign_in_addresses")
