"""OAuth 1.0a: merchants' RSA public keys and the nonces seen

Revision ID: 0011
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "merchant_keys",
        sa.Column("id", _Id, primary_key=True, autoincrement=True),
        sa.Column("merchant_id", _Id, sa.ForeignKey("merchants.id"), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("public_key_pem", sa.Text(), nullable=False),
        sa.Column("fingerprint", sa.String(64), nullable=False),
        sa.Column("bits", sa.Integer(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("revoked_at_ms", sa.BigInteger(), nullable=True),
        sa.UniqueConstraint("merchant_id", "fingerprint", name="uq_merchant_keys_fingerprint"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_merchant_keys_merchant_mode", "merchant_keys", ["merchant_id", "mode"])
    op.create_table(
        "oauth_nonces",
        sa.Column("merchant_id", _Id, sa.ForeignKey("merchants.id"), primary_key=True),
        sa.Column("timestamp_s", sa.BigInteger(), primary_key=True),
        sa.Column("nonce", sa.String(128), primary_key=True),
    )
    op.create_index("ix_oauth_nonces_timestamp", "oauth_nonces", ["timestamp_s"])


def downgrade() -> None:
    op.drop_index("ix_oauth_nonces_timestamp", table_name="oauth_nonces")
    op.drop_table("oauth_nonces")
    op.drop_index("ix_merchant_keys_merchant_mode", table_name="merchant_keys")
    op.drop_table("merchant_keys")
