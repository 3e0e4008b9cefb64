"""Queries on merchants, endpoints and endpoint groups (operator writes, API reads)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, insert, select, update

from kassa.domain.merchants import Endpoint, Merchant, Mode
from kassa.storage.prepared import Record
from kassa.storage.tables import endpoints, group_members, merchants


class NotFound(LookupError):
    pass


def create_merchant(conn: Connection, login: str, control_key: str, classic: bool, now_ms: int) -> Merchant:
    merchant_id = conn.execute(
        insert(merchants).values(login=login, control_key=control_key, classic=classic, created_at_ms=now_ms)
    ).inserted_primary_key[0]  # type: ignore[index]
    return Merchant(merchant_id, login, control_key, classic)


def merchant_by_login(conn: Connection, login: str) -> Merchant:
    row = conn.execute(select(merchants).where(merchants.c.login == login)).mappings().first()
    if row is None:
        raise NotFound(f"no merchant with login {login!r}")
    return _merchant(row)


def list_merchants(conn: Connection) -> list[Merchant]:
    return [_merchant(r) for r in conn.execute(select(merchants).order_by(merchants.c.id)).mappings()]


@dataclass(frozen=True, slots=True)
class EndpointSpec:
    merchant_id: int
    currency: str
    mode: Mode
    classic: bool
    descriptor: str
    min_amount: int | None
    max_amount: int | None
    multi_capture: bool
    endpoint_id: int | None = None
    replay_window_seconds: int = 0


def create_endpoint(conn: Connection, spec: EndpointSpec, now_ms: int) -> int:
    values = {
        "merchant_id": spec.merchant_id,
        "kind": "endpoint",
        "currency": spec.currency,
        "mode": spec.mode.value,
        "classic": spec.classic,
        "descriptor": spec.descriptor,
        "min_amount": spec.min_amount,
        "max_amount": spec.max_amount,
        "multi_capture": spec.multi_capture,
        "enabled": True,
        "created_at_ms": now_ms,
        "replay_window_seconds": spec.replay_window_seconds,
    }
    if spec.endpoint_id is not None:
        values["id"] = spec.endpoint_id
    endpoint_id = int(conn.execute(insert(endpoints).values(**values)).inserted_primary_key[0])  # type: ignore[index]
    if spec.endpoint_id is not None and conn.dialect.name == "postgresql":
        # An id chosen by the operator bypasses the sequence; move it on so generated ids never collide.
        conn.exec_driver_sql(
            "SELECT setval(pg_get_serial_sequence('endpoints', 'id'), (SELECT MAX(id) FROM endpoints))"
        )
    return endpoint_id


def create_group(conn: Connection, merchant_id: int, member_ids: Sequence[int], now_ms: int) -> int:
    for member_id in member_ids:
        member = load_endpoint(conn, member_id)
        if member.is_group or member.merchant.id != merchant_id:
            raise NotFound(f"endpoint {member_id} is not an endpoint of this merchant")
    group_id = int(
        conn.execute(
            insert(endpoints).values(
                merchant_id=merchant_id,
                kind="group",
                mode=Mode.SANDBOX.value,
                classic=False,
                descriptor="",
                multi_capture=False,
                enabled=True,
                created_at_ms=now_ms,
            )
        ).inserted_primary_key[0]  # type: ignore[index]
    )
    conn.execute(insert(group_members), [{"group_id": group_id, "endpoint_id": m} for m in member_ids])
    return group_id


def set_replay_window(conn: Connection, endpoint_id: int, seconds: int) -> Endpoint:
    """Sets an endpoint's replay window; a group has none of its own (it takes its members')."""
    if _endpoint_row(conn, endpoint_id)["kind"] == "group":
        raise NotFound(f"{endpoint_id} is a group: set the replay window on its member endpoints")
    conn.execute(update(endpoints).where(endpoints.c.id == endpoint_id).values(replay_window_seconds=seconds))
    return load_endpoint(conn, endpoint_id)


def has_live_endpoint(conn: Connection) -> bool:
    return conn.execute(select(endpoints.c.id).where(endpoints.c.mode == Mode.LIVE.value).limit(1)).first() is not None


def load_endpoint(conn: Connection, endpoint_id: int) -> Endpoint:
    row = _endpoint_row(conn, endpoint_id)
    merchant = _merchant(conn.execute(select(merchants).where(merchants.c.id == row["merchant_id"])).mappings().one())
    members: tuple[Endpoint, ...] = ()
    if row["kind"] == "group":
        member_rows = conn.execute(
            select(endpoints)
            .join(group_members, group_members.c.endpoint_id == endpoints.c.id)
            .where(group_members.c.group_id == endpoint_id)
            .order_by(endpoints.c.id)
        ).mappings()
        members = tuple(_endpoint(r, merchant) for r in member_rows)
    return _endpoint(row, merchant, members)


def list_endpoints(conn: Connection) -> list[Endpoint]:
    ids = conn.execute(select(endpoints.c.id).order_by(endpoints.c.id)).scalars().all()
    return [load_endpoint(conn, endpoint_id) for endpoint_id in ids]


def _endpoint_row(conn: Connection, endpoint_id: int) -> Record:
    row = conn.execute(select(endpoints).where(endpoints.c.id == endpoint_id)).mappings().first()
    if row is None:
        raise NotFound(f"no endpoint or group {endpoint_id}")
    return row


def _merchant(row: Record) -> Merchant:
    return Merchant(row["id"], row["login"], row["control_key"], bool(row["classic"]))


def _endpoint(row: Record, merchant: Merchant, members: tuple[Endpoint, ...] = ()) -> Endpoint:
    return Endpoint(
        id=row["id"],
        merchant=merchant,
        is_group=row["kind"] == "group",
        currency=row["currency"],
        mode=Mode(row["mode"]),
        classic=bool(row["classic"]),
        descriptor=row["descriptor"],
        min_amount=row["min_amount"],
        max_amount=row["max_amount"],
        multi_capture=bool(row["multi_capture"]),
        enabled=bool(row["enabled"]),
        members=members,
        replay_window_seconds=row["replay_window_seconds"],
    )
