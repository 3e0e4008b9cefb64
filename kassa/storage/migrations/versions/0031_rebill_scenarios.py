"""a rebill's merchant-initiated scenario (recurrent_scenario) and the lower amounts it may try
(enumerate_amounts), kept with its order; the amount of each message to an acquirer, so that each amount a
rebill tries is a try of its own over ISO 8583

Revision ID: 0031
Revises: 0030
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("orders") as table:
        table.add_column(sa.Column("recurrent_scenario", sa.String(16)))
        table.add_column(sa.Column("enumerate_amounts", sa.String(256)))
    with op.batch_alter_table("acquirer_messages") as table:
        table.add_column(sa.Column("amount", sa.BigInteger()))


def downgrade() -> None:
    with op.batch_alter_table("acquirer_messages") as table:
        table.drop_column("amount")
    with op.batch_alter_table("orders") as table:
        table.drop_column("enumerate_amounts")
        table.drop_column("recurrent_scenario")
