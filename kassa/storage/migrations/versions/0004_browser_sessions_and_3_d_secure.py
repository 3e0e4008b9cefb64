"""browser sessions and 3-D Secure

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "browser_sessions",
        sa.Column("token", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("order_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("transaction_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("used_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["order_id"],
            ["orders.id"],
        ),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["transactions.id"],
        ),
        sa.PrimaryKeyConstraint("token"),
    )
    with op.batch_alter_table("browser_sessions", schema=None) as batch_op:
        batch_op.create_index("ix_browser_sessions_transaction", ["transaction_id", "kind"], unique=False)

    op.create_table(
        "three_ds",
        sa.Column("transaction_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("version", sa.String(length=8), nullable=False),
        sa.Column("path", sa.String(length=32), nullable=False),
        sa.Column("step", sa.String(length=16), nullable=False),
        sa.Column("server_trans_id", sa.String(length=36), nullable=False),
        sa.Column("acs_trans_id", sa.String(length=36), nullable=False),
        sa.Column("comp_ind", sa.String(length=1), nullable=True),
        sa.Column("trans_status", sa.String(length=1), nullable=True),
        sa.Column("eci", sa.String(length=2), nullable=True),
        sa.Column("authentication_value", sa.String(length=64), nullable=True),
        sa.Column("challenge_code", sa.String(length=8), nullable=True),
        sa.Column("method_notified", sa.Boolean(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["transaction_id"],
            ["transactions.id"],
        ),
        sa.PrimaryKeyConstraint("transaction_id"),
        sa.UniqueConstraint("acs_trans_id"),
        sa.UniqueConstraint("server_trans_id"),
    )


def downgrade() -> None:
    op.drop_table("three_ds")
    with op.batch_alter_table("browser_sessions", schema=None) as batch_op:
        batch_op.drop_index("ix_browser_sessions_transaction")

    op.drop_table("browser_sessions")
