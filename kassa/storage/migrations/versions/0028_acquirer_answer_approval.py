"""the approval code (field 38) of an acquirer's answer, kept with its message: a job run again after a crash
that followed the answer reports the answer as given, instead of sending the request anew

Revision ID: 0028
Revises: 0027
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("acquirer_messages") as table:
        table.add_column(sa.Column("approval_code", sa.String(6)))


def downgrade() -> None:
    with op.batch_alter_table("acquirer_messages") as table:
        table.drop_column("approval_code")
