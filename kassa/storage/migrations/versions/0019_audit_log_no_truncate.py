"""the audit log cannot be emptied by TRUNCATE on PostgreSQL, as it cannot by UPDATE or DELETE

Revision ID: 0019
Revises: 0018
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

# 0014's row triggers do not fire on TRUNCATE, which empties a table at once; a statement trigger does.
# SQLite has no TRUNCATE: its DELETE without WHERE fires the row triggers it has already.


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute(
            "CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON audit_log"
            " FOR EACH STATEMENT EXECUTE FUNCTION audit_log_append_only()"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER audit_log_no_truncate ON audit_log")
