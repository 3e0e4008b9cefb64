"""Rows of 3-D Secure authentications (one per authenticated transaction)."""

from __future__ import annotations

from sqlalchemy import Connection, insert, select, update

from kassa.storage.prepared import Record
from kassa.storage.tables import three_ds


def create(conn: Connection, transaction_id: int, values: dict[str, object], now_ms: int) -> None:
    conn.execute(
        insert(three_ds).values(transaction_id=transaction_id, created_at_ms=now_ms, updated_at_ms=now_ms, **values)
    )


def of_transaction(conn: Connection, transaction_id: int, *, lock: bool = False) -> Record | None:
    query = select(three_ds).where(three_ds.c.transaction_id == transaction_id)
    return conn.execute(query.with_for_update() if lock else query).mappings().first()


def by_acs_trans_id(conn: Connection, acs_trans_id: str) -> Record | None:
    return conn.execute(select(three_ds).where(three_ds.c.acs_trans_id == acs_trans_id)).mappings().first()


def by_server_trans_id(conn: Connection, server_trans_id: str) -> Record | None:
    return conn.execute(select(three_ds).where(three_ds.c.server_trans_id == server_trans_id)).mappings().first()


def change(conn: Connection, transaction_id: int, now_ms: int, **values: object) -> None:
    conn.execute(
        update(three_ds).where(three_ds.c.transaction_id == transaction_id).values(updated_at_ms=now_ms, **values)
    )
