"""operators, their console sessions, the audit log, and the indexes of the console's order search

Revision ID: 0014
Revises: 0013
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

# The audit log only grows: UPDATE and DELETE are refused by the database itself, whoever connects.
_APPEND_ONLY = {
    "sqlite": [
        "CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log"
        " BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END",
        "CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log"
        " BEGIN SELECT RAISE(ABORT, 'the audit log is append-only'); END",
    ],
    "postgresql": [
        "CREATE FUNCTION audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS"
        " $$ BEGIN RAISE EXCEPTION 'the audit log is append-only'; END $$",
        "CREATE TRIGGER audit_log_append_only BEFORE UPDATE OR DELETE ON audit_log"
        " FOR EACH ROW EXECUTE FUNCTION audit_log_append_only()",
    ],
}


def upgrade() -> None:
    op.create_table(
        "operators",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("email", sa.String(254), nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("password_hash", sa.Text(), nullable=False),
        sa.Column("totp_sealed", sa.LargeBinary(), nullable=True),
        sa.Column("totp_last_step", sa.BigInteger(), nullable=True),
        sa.Column("failed_signins", sa.Integer(), nullable=False),
        sa.Column("locked_until_ms", sa.BigInteger(), nullable=True),
        sa.Column("disabled_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("email"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "operator_sessions",
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("operator_id", _ID, nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("last_seen_at_ms", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["operator_id"], ["operators.id"]),
        sa.PrimaryKeyConstraint("token_hash"),
    )
    op.create_index("ix_operator_sessions_operator", "operator_sessions", ["operator_id"])
    op.create_table(
        "audit_log",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("at_ms", sa.BigInteger(), nullable=False),
        sa.Column("actor", sa.String(254), nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("target", sa.String(128), nullable=False),
        sa.Column("outcome", sa.String(16), nullable=False),
        sa.Column("before", sa.Text(), nullable=True),
        sa.Column("after", sa.Text(), nullable=True),
        sa.Column("address", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_audit_log_actor", "audit_log", ["actor", "id"])
    op.create_index("ix_audit_log_action", "audit_log", ["action", "id"])
    for statement in _APPEND_ONLY[op.get_bind().dialect.name]:
        op.execute(statement)
    op.create_index("ix_cards_last_four", "cards", ["last_four"])
    op.create_index("ix_orders_client_orderid", "orders", ["client_orderid"])
    op.create_index("ix_orders_card", "orders", ["card_id"])
    op.create_index("ix_orders_created", "orders", ["created_at_ms"])


def downgrade() -> None:
    for index, table in (
        ("ix_orders_created", "orders"),
        ("ix_orders_card", "orders"),
        ("ix_orders_client_orderid", "orders"),
        ("ix_cards_last_four", "cards"),
    ):
        op.drop_index(index, table_name=table)
    op.drop_table("audit_log")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION audit_log_append_only()")
    op.drop_table("operator_sessions")
    op.drop_table("operators")
