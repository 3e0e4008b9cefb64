"""callback delivery limits: each callback's destination and merchant, and their leases

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

from urllib.parse import urlsplit

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None

_Id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    # The delivery limits count callbacks in flight (leased) per destination and per merchant, at every
    # claim and every hand-over: both columns lead an index with the lease.
    op.add_column("callbacks", sa.Column("destination", sa.String(255), nullable=False, server_default=sa.text("''")))
    if op.get_bind().dialect.name == "sqlite":  # SQLite adds a column's reference, not a constraint
        op.execute("ALTER TABLE callbacks ADD COLUMN merchant_id INTEGER REFERENCES merchants (id)")
    else:
        op.add_column("callbacks", sa.Column("merchant_id", _Id, sa.ForeignKey("merchants.id"), nullable=True))
    _fill()
    op.create_index("ix_callbacks_destination_lease", "callbacks", ["destination", "lease_until_ms"])
    op.create_index("ix_callbacks_merchant_lease", "callbacks", ["merchant_id", "lease_until_ms"])


def _fill() -> None:
    conn = op.get_bind()
    conn.execute(sa.text("UPDATE callbacks SET merchant_id = (SELECT merchant_id FROM orders WHERE id = order_id)"))
    urls = conn.execute(sa.text("SELECT DISTINCT url FROM callbacks")).scalars().all()
    for url in urls:  # the rule of kassa.domain.callbacks.destination as of this revision
        conn.execute(
            sa.text("UPDATE callbacks SET destination = :destination WHERE url = :url"),
            {"destination": _destination(url), "url": url},
        )


def _destination(url: str) -> str:
    try:
        parts = urlsplit(url)
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        return f"{parts.hostname or ''}:{port}"[:255]
    except ValueError:
        return "unsendable"


def downgrade() -> None:
    op.drop_index("ix_callbacks_merchant_lease", table_name="callbacks")
    op.drop_index("ix_callbacks_destination_lease", table_name="callbacks")
    with op.batch_alter_table("callbacks") as batch:
        batch.drop_column("merchant_id")
        batch.drop_column("destination")
