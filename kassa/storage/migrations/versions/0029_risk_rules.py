"""risk rules: block lists and velocity limits, their counts, and the orders they filtered

Revision ID: 0029
Revises: 0028
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "risk_rules",
        sa.Column("id", _ID, nullable=False, autoincrement=True),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("merchant_id", _ID, nullable=True),
        sa.Column("endpoint_id", _ID, nullable=True),
        sa.Column("entries", sa.Text(), nullable=False),
        sa.Column("per", sa.String(16), nullable=True),
        sa.Column("limit_value", sa.BigInteger(), nullable=True),
        sa.Column("window_ms", sa.BigInteger(), nullable=True),
        sa.Column("currency", sa.String(3), nullable=True),
        sa.Column("note", sa.String(200), nullable=False),
        sa.Column("created_by", sa.String(254), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("disabled_at_ms", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"]),
        sa.ForeignKeyConstraint(["endpoint_id"], ["endpoints.id"]),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "risk_velocity",
        sa.Column("rule_id", _ID, nullable=False),
        sa.Column("key", sa.String(64), nullable=False),
        sa.Column("bucket_ms", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["rule_id"], ["risk_rules.id"]),
        sa.PrimaryKeyConstraint("rule_id", "key", "bucket_ms"),
    )
    op.create_index("ix_risk_velocity_age", "risk_velocity", ["rule_id", "bucket_ms"])
    op.create_table(
        "risk_hits",
        sa.Column("rule_id", _ID, nullable=False),
        sa.Column("order_id", _ID, nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["rule_id"], ["risk_rules.id"]),
        sa.ForeignKeyConstraint(["order_id"], ["orders.id"]),
        sa.PrimaryKeyConstraint("rule_id", "order_id"),
    )
    op.create_index("ix_risk_hits_rule_time", "risk_hits", ["rule_id", "at_ms"])
    op.create_index("ix_risk_hits_order", "risk_hits", ["order_id"])


def downgrade() -> None:
    op.drop_table("risk_hits")
    op.drop_table("risk_velocity")
    op.drop_table("risk_rules")
