"""hosted fields: ephemeral tickets and the tokens of the cards tokenized with them

Revision ID: 0032
Revises: 0031
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "hosted_fields_tickets",
        sa.Column("ticket_digest", sa.String(64), nullable=False),
        sa.Column("merchant_id", _ID, nullable=False),
        sa.Column("endpoint_id", sa.BigInteger(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("spent_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("token_digest", sa.String(64), nullable=True),
        sa.Column("pan_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("pan_fingerprint", sa.String(64), nullable=True),
        sa.Column("bin", sa.String(8), nullable=True),
        sa.Column("last_four", sa.String(4), nullable=True),
        sa.Column("brand", sa.String(16), nullable=True),
        sa.Column("exp_month", sa.Integer(), nullable=True),
        sa.Column("exp_year", sa.Integer(), nullable=True),
        sa.Column("cvv_ciphertext", sa.LargeBinary(), nullable=True),
        sa.Column("used_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("order_id", _ID, nullable=True),
        sa.ForeignKeyConstraint(["merchant_id"], ["merchants.id"]),
        sa.ForeignKeyConstraint(["order_id"], ["orders.id"]),
        sa.PrimaryKeyConstraint("ticket_digest"),
        sa.UniqueConstraint("token_digest"),
    )
    op.create_index("ix_hosted_fields_tickets_expiry", "hosted_fields_tickets", ["expires_at_ms"])


def downgrade() -> None:
    op.drop_table("hosted_fields_tickets")
