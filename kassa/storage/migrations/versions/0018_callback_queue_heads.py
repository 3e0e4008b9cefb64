"""callback queue heads: each callback's lane, each destination's next due times and outage

Revision ID: 0018
Revises: 0017
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_LANES = "lane IS NOT NULL"
_LEASED = "lease_until_ms IS NOT NULL"
_LEASE_INDEXES = (("ix_callbacks_destination_lease", "destination"), ("ix_callbacks_merchant_lease", "merchant_id"))


def upgrade() -> None:
    # A claim reads each due destination's next callbacks by ix_callbacks_queue (rows that may be claimed
    # only) instead of ranking every due callback; ix_callbacks_leased finds the leases that ran out.
    op.add_column("callbacks", sa.Column("lane", sa.SmallInteger(), nullable=True))
    op.create_table(
        "callback_destinations",
        sa.Column("destination", sa.String(255), primary_key=True),
        sa.Column("first_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("retry_at_ms", sa.BigInteger(), nullable=True),
        sa.Column("failures", sa.Integer(), nullable=False),
        sa.Column("failed_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("probe_at_ms", sa.BigInteger(), nullable=False),
    )
    _fill()
    op.create_index(
        "ix_callbacks_queue",
        "callbacks",
        ["destination", "lane", "next_attempt_at_ms", "id"],
        sqlite_where=sa.text(_LANES),
        postgresql_where=sa.text(_LANES),
    )
    op.create_index(
        "ix_callbacks_leased",
        "callbacks",
        ["lease_until_ms"],
        sqlite_where=sa.text(_LEASED),
        postgresql_where=sa.text(_LEASED),
    )
    op.create_index("ix_callback_destinations_first", "callback_destinations", ["first_at_ms", "destination"])
    op.create_index("ix_callback_destinations_retry", "callback_destinations", ["retry_at_ms", "destination"])
    # The limits count leased rows only: indexes of those alone stay small and shallow however many
    # callbacks are queued, and a callback written or leased changes fewer entries.
    for name, column in _LEASE_INDEXES:
        op.drop_index(name, table_name="callbacks")
        op.create_index(
            name,
            "callbacks",
            [column, "lease_until_ms"],
            sqlite_where=sa.text(_LEASED),
            postgresql_where=sa.text(_LEASED),
        )


def _fill() -> None:
    """Pending callbacks not leased and not waiting for an earlier one of their order and URL take their
    lane; leased ones take theirs when the lease is given back or runs out. Every destination with a
    pending callback gets its row, with no outage."""
    op.execute(
        "UPDATE callbacks SET lane = CASE WHEN attempts = 0 THEN 0 ELSE 1 END"
        " WHERE state = 'pending' AND lease_until_ms IS NULL AND NOT EXISTS ("
        "SELECT 1 FROM callbacks AS earlier WHERE earlier.order_id = callbacks.order_id"
        " AND earlier.url = callbacks.url AND earlier.state = 'pending' AND earlier.id < callbacks.id)"
    )
    op.execute(
        "INSERT INTO callback_destinations (destination, first_at_ms, retry_at_ms, failures, failed_at_ms,"
        " probe_at_ms) SELECT destination,"
        " MIN(CASE WHEN lane = 0 THEN next_attempt_at_ms END), MIN(CASE WHEN lane = 1 THEN next_attempt_at_ms END),"
        " 0, 0, 0 FROM callbacks WHERE state = 'pending' GROUP BY destination"
    )


def downgrade() -> None:
    for name, column in _LEASE_INDEXES:
        op.drop_index(name, table_name="callbacks")
        op.create_index(name, "callbacks", [column, "lease_until_ms"])
    op.drop_index("ix_callback_destinations_retry", table_name="callback_destinations")
    op.drop_index("ix_callback_destinations_first", table_name="callback_destinations")
    op.drop_table("callback_destinations")
    op.drop_index("ix_callbacks_leased", table_name="callbacks")
    op.drop_index("ix_callbacks_queue", table_name="callbacks")
    with op.batch_alter_table("callbacks") as batch:
        batch.drop_column("lane")
