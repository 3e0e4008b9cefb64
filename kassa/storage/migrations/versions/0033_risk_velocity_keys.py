"""risk_velocity keyed by a 64-bit number, and on SQLite by its primary key alone (WITHOUT ROWID)

A velocity count's key was a digest's 64 hex digits; it is now the digest's first 64 bits as a signed
bigint (``storage.risk.key_digest``): the index of (rule, key, bucket) is a third the size and its
comparisons are of integers, and on SQLite a key's buckets are read from the one B-tree that holds them
rather than through an index and then the table. Counts kept are carried over under their keys'
numbers (the same digest, cut), so limits go on counting across the upgrade.

Revision ID: 0033
Revises: 0032
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0033"
down_revision = "0032"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _number(key: str) -> int:
    return int.from_bytes(bytes.fromhex(key[:16]), "big", signed=True)


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        number = "('x' || substr(key, 1, 16))::bit(64)::bigint"
    else:
        bind.connection.driver_connection.create_function("kassa_key_number", 1, _number, deterministic=True)  # type: ignore[union-attr]
        number = "kassa_key_number(key)"
    op.execute(
        "CREATE TABLE risk_velocity_moved AS SELECT rule_id, "
        f"{number} AS key, bucket_ms, sum(count) AS count, sum(amount) AS amount FROM risk_velocity "
        f"GROUP BY rule_id, {number}, bucket_ms"
    )
    op.drop_index("ix_risk_velocity_age", table_name="risk_velocity")
    op.drop_table("risk_velocity")
    _create(sa.BigInteger(), with_rowid=False)
    op.execute(
        "INSERT INTO risk_velocity (rule_id, key, bucket_ms, count, amount)"
        " SELECT rule_id, key, bucket_ms, count, amount FROM risk_velocity_moved"
    )
    op.drop_table("risk_velocity_moved")


def downgrade() -> None:
    """The counts are dropped: a cut digest cannot be made whole again (limits start from zero)."""
    op.drop_index("ix_risk_velocity_age", table_name="risk_velocity")
    op.drop_table("risk_velocity")
    _create(sa.String(64))


def _create(key: sa.types.TypeEngine[Any], *, with_rowid: bool = True) -> None:
    op.create_table(
        "risk_velocity",
        sa.Column("rule_id", _ID, nullable=False),
        sa.Column("key", key, nullable=False),
        sa.Column("bucket_ms", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("amount", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["rule_id"], ["risk_rules.id"]),
        sa.PrimaryKeyConstraint("rule_id", "key", "bucket_ms"),
        sqlite_with_rowid=with_rowid,
    )
    op.create_index("ix_risk_velocity_age", "risk_velocity", ["rule_id", "bucket_ms"])
