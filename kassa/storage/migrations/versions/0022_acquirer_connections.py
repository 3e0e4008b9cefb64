"""acquirer connections as data, and each endpoint's ordered list of them; the built-in sandbox is one,
and every sandbox endpoint is served by it, as it was before

Revision ID: 0022
Revises: 0021
"""

from __future__ import annotations

import time

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "acquirer_connections",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("name", sa.String(64), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("host", sa.String(253), nullable=True),
        sa.Column("port", sa.Integer(), nullable=True),
        sa.Column("tls", sa.Boolean(), nullable=True),
        sa.Column("acquiring_institution_id", sa.String(11), nullable=True),
        sa.Column("terminal_id", sa.String(8), nullable=True),
        sa.Column("card_acceptor_id", sa.String(15), nullable=True),
        sa.Column("mcc", sa.String(4), nullable=True),
        sa.Column("response_timeout_ms", sa.Integer(), nullable=True),
        sa.Column("sockets", sa.Integer(), nullable=True),
        sa.Column("dialect", sa.String(32), nullable=True),
        sa.Column("secret_sealed", sa.LargeBinary(), nullable=True),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_at_ms", sa.BigInteger(), nullable=False),
        sa.Column("updated_at_ms", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
        sqlite_autoincrement=True,
    )
    op.create_table(
        "endpoint_connections",
        sa.Column("endpoint_id", _ID, nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("connection_id", _ID, nullable=False),
        sa.ForeignKeyConstraint(["endpoint_id"], ["endpoints.id"]),
        sa.ForeignKeyConstraint(["connection_id"], ["acquirer_connections.id"]),
        sa.PrimaryKeyConstraint("endpoint_id", "position"),
        sa.UniqueConstraint("endpoint_id", "connection_id", name="uq_endpoint_connections_connection"),
    )
    op.create_index("ix_endpoint_connections_connection", "endpoint_connections", ["connection_id"])
    now_ms = int(time.time() * 1000)
    op.execute(
        sa.text(
            "INSERT INTO acquirer_connections (name, kind, enabled, created_at_ms, updated_at_ms)"
            " VALUES ('sandbox', 'sandbox', true, :now, :now)"
        ).bindparams(now=now_ms)
    )
    op.execute(
        "INSERT INTO endpoint_connections (endpoint_id, position, connection_id)"
        " SELECT endpoints.id, 1, acquirer_connections.id FROM endpoints, acquirer_connections"
        " WHERE endpoints.kind = 'endpoint' AND endpoints.mode = 'sandbox' AND acquirer_connections.name = 'sandbox'"
    )


def downgrade() -> None:
    op.drop_table("endpoint_connections")
    op.drop_table("acquirer_connections")
