"""the directory server's transaction id of an EMV 3-D Secure 2.x authentication, kept with its ECI and
CAVV and sent to the acquirer (ISO 8583 field 48 ``DS``); 1.0.2 has none

Revision ID: 0026
Revises: 0025
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("three_ds") as table:
        table.add_column(sa.Column("ds_trans_id", sa.String(36), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("three_ds") as table:
        table.drop_column("ds_trans_id")
