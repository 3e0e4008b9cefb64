"""routing conditions of an endpoint's connections (card brand, BIN ranges, currency, amount, kind) and the
endpoint's cascade list (CONTRACT §16)

Revision ID: 0024
Revises: 0023
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("endpoint_connections") as table:
        table.add_column(sa.Column("conditions", sa.String(2000)))
    with op.batch_alter_table("endpoints") as table:
        table.add_column(sa.Column("cascade_codes", sa.String(64)))


def downgrade() -> None:
    with op.batch_alter_table("endpoints") as table:
        table.drop_column("cascade_codes")
    with op.batch_alter_table("endpoint_connections") as table:
        table.drop_column("conditions")
