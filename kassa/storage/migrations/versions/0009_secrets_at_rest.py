"""secrets at rest: control keys sealed, browser-session tokens by their SHA-256

Revision ID: 0009
Revises: 0008

Sealing needs the vault key, which migrations do not have: this adds the columns, keys every browser
session by its token's digest, and leaves the values in clear where they were. The gateway seals them
when it starts (``kassa/storage/sealing.py``), before it serves.
"""

from __future__ import annotations

import hashlib

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("merchants") as batch_op:
        batch_op.add_column(sa.Column("control_key_sealed", sa.LargeBinary(), nullable=True))
        batch_op.alter_column("control_key", existing_type=sa.String(length=128), nullable=True)

    _key_browser_sessions_by_digest()


_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _key_browser_sessions_by_digest() -> None:
    """The table again, keyed by the token's digest: changing a primary key in place is a different
    dance on each backend, and sessions are few (they live for half an hour)."""
    conn = op.get_bind()
    rows = [dict(row) for row in conn.execute(sa.text("SELECT * FROM browser_sessions")).mappings()]
    op.drop_index("ix_browser_sessions_transaction", table_name="browser_sessions")
    op.drop_table("browser_sessions")
    table = op.create_table(
        "browser_sessions",
        sa.Column("token_digest", sa.String(length=64), nullable=False),
        sa.Column("token_sealed", sa.LargeBinary(), nullable=True),
        sa.Column("token", sa.String(length=64), nullable=True),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("order_id", _ID, nullable=False),
        sa.Column("transaction_id", _ID, nullable=False),
        sa.Column("expires_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("used_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["order_id"], ["orders.id"]),
        sa.ForeignKeyConstraint(["transaction_id"], ["transactions.id"]),
        sa.PrimaryKeyConstraint("token_digest"),
    )
    op.create_index("ix_browser_sessions_transaction", "browser_sessions", ["transaction_id", "kind"])
    if rows:
        digests = [{"token_digest": hashlib.sha256(row["token"].encode()).hexdigest(), **row} for row in rows]
        op.bulk_insert(table, digests)


def downgrade() -> None:
    raise NotImplementedError("tokens and keys once sealed are not written back in clear")
