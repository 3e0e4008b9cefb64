"""Queries on merchants, endpoints and endpoint groups (operator writes, API reads)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, case, func, insert, literal, select, update

from kassa.domain.acquirers import SANDBOX_NAME, route_problem
from kassa.domain.acquirers import Connection as AcquirerConnection
from kassa.domain.merchants import Endpoint, Merchant, Mode, Network, parse_network
from kassa.storage.prepared import Record
from kassa.storage.tables import acquirer_connections, endpoint_connections, endpoints, group_members, merchants
from kassa.vault.keys import Vault, control_key_context


class NotFound(LookupError):
    pass


class Refused(ValueError):
    """An endpoint the rules refuse to create as asked (its connections, ``domain.acquirers.route_problem``);
    the message says why."""


def create_merchant(
    conn: Connection, vault: Vault, login: str, control_key: str, classic: bool, now_ms: int
) -> Merchant:
    """The key is sealed bound to the merchant's id, which the insert gives: operators create merchants
    rarely, so the second statement costs nothing that matters."""
    merchant_id = conn.execute(
        insert(merchants).values(login=login, classic=classic, created_at_ms=now_ms)
    ).inserted_primary_key[0]  # type: ignore[index]
    sealed = vault.encrypt(control_key, control_key_context(merchant_id))
    conn.execute(update(merchants).where(merchants.c.id == merchant_id).values(control_key_sealed=sealed))
    return Merchant(merchant_id, login, control_key, classic)


def merchant_by_login(conn: Connection, vault: Vault, login: str) -> Merchant:
    row = conn.execute(select(merchants).where(merchants.c.login == login)).mappings().first()
    if row is None:
        raise NotFound(f"no merchant with login {login!r}")
    return _merchant(row, vault)


def merchant_id(conn: Connection, login: str) -> int:
    """The id of the merchant with ``login``, without opening its key."""
    found = conn.execute(select(merchants.c.id).where(merchants.c.login == login)).scalar()
    if found is None:
        raise NotFound(f"no merchant with login {login!r}")
    return int(found)


def list_merchants(conn: Connection, vault: Vault) -> list[Merchant]:
    return [_merchant(r, vault) for r in conn.execute(select(merchants).order_by(merchants.c.id)).mappings()]


def set_allowed_networks(conn: Connection, vault: Vault, login: str, networks: Sequence[Network]) -> Merchant:
    """Replaces the merchant's allowed networks; none: requests from anywhere."""
    stored = ",".join(str(network) for network in networks) or None
    done = conn.execute(update(merchants).where(merchants.c.login == login).values(allowed_networks=stored))
    if done.rowcount == 0:
        raise NotFound(f"no merchant with login {login!r}")
    return merchant_by_login(conn, vault, login)


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


def create_endpoint(conn: Connection, spec: EndpointSpec, now_ms: int, route: Sequence[AcquirerConnection] = ()) -> int:
    """A new endpoint served by ``route``, its acquirer connections in the order payments try them, if the
    rule allows it for the endpoint's mode (else ``Refused``): a live endpoint needs an enabled ISO 8583 one,
    so that no live endpoint is ever made that cannot take a payment; a sandbox endpoint given none is
    served by the sandbox."""
    problem = route_problem(spec.mode, route) if route or spec.mode is Mode.LIVE else None
    if problem:
        raise Refused(problem)
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
    if route:
        rows = [
            {"endpoint_id": endpoint_id, "position": position, "connection_id": connection.id}
            for position, connection in enumerate(route, start=1)
        ]
        conn.execute(insert(endpoint_connections), rows)
    else:
        _route_to_the_sandbox(conn, endpoint_id)
    return endpoint_id


def _route_to_the_sandbox(conn: Connection, endpoint_id: int) -> None:
    """A new sandbox endpoint given no connections is served by the built-in sandbox connection, as every
    sandbox endpoint was before connections were data (migration 0022)."""
    sandbox = select(literal(endpoint_id), literal(1), acquirer_connections.c.id).where(
        acquirer_connections.c.name == SANDBOX_NAME
    )
    conn.execute(insert(endpoint_connections).from_select(["endpoint_id", "position", "connection_id"], sandbox))


def create_group(conn: Connection, merchant_id: int, member_ids: Sequence[int], now_ms: int) -> int:
    for member_id in member_ids:
        member = _endpoint_row(conn, member_id)
        if member["kind"] == "group" or member["merchant_id"] != merchant_id:
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


def set_replay_window(conn: Connection, vault: Vault, endpoint_id: int, seconds: int) -> Endpoint:
    """Sets an endpoint's replay window; a group has none of its own (it takes its members')."""
    if _endpoint_row(conn, endpoint_id)["kind"] == "group":
        raise NotFound(f"{endpoint_id} is a group: set the replay window on its member endpoints")
    conn.execute(update(endpoints).where(endpoints.c.id == endpoint_id).values(replay_window_seconds=seconds))
    return load_endpoint(conn, vault, endpoint_id)


# What an operator may change on an endpoint after its creation (the console's endpoint form).
ENDPOINT_CHANGES = frozenset({"descriptor", "min_amount", "max_amount", "mode", "enabled", "replay_window_seconds"})


def update_endpoint(conn: Connection, vault: Vault, endpoint_id: int, **changes: object) -> Endpoint:
    """Sets the named columns of an endpoint (``ENDPOINT_CHANGES``); a group has none of these of its own."""
    unknown = set(changes) - ENDPOINT_CHANGES
    assert not unknown, f"not an endpoint setting: {sorted(unknown)}"
    row = _endpoint_row(conn, endpoint_id)
    if row["kind"] == "group":
        raise NotFound(f"{endpoint_id} is a group: change its member endpoints")
    values = {name: value.value if isinstance(value, Mode) else value for name, value in changes.items()}
    if values:
        conn.execute(update(endpoints).where(endpoints.c.id == endpoint_id).values(**values))
    return load_endpoint(conn, vault, endpoint_id)


def endpoints_of(conn: Connection, vault: Vault, merchant_id: int) -> list[Endpoint]:
    """One merchant's endpoints and groups, by id."""
    query = select(endpoints.c.id).where(endpoints.c.merchant_id == merchant_id).order_by(endpoints.c.id)
    return [load_endpoint(conn, vault, endpoint_id) for endpoint_id in conn.execute(query).scalars()]


@dataclass(frozen=True, slots=True)
class MerchantSummary:
    """A merchant as a list shows it, without opening its control key."""

    id: int
    login: str
    classic: bool
    created_at_ms: int
    endpoints: int
    live: bool


def summaries(conn: Connection) -> list[MerchantSummary]:
    """Every merchant by login, with how many endpoints it has and whether any is live."""
    live = func.sum(case((endpoints.c.mode == Mode.LIVE.value, 1), else_=0))
    rows = conn.execute(
        select(
            merchants.c.id,
            merchants.c.login,
            merchants.c.classic,
            merchants.c.created_at_ms,
            func.count(endpoints.c.id),
            live,
        )
        .outerjoin(endpoints, endpoints.c.merchant_id == merchants.c.id)
        .group_by(merchants.c.id, merchants.c.login, merchants.c.classic, merchants.c.created_at_ms)
        .order_by(merchants.c.login)
    )
    return [
        MerchantSummary(int(i), login, bool(classic), int(at), int(count), bool(is_live))
        for i, login, classic, at, count, is_live in rows
    ]


def has_live_endpoint(conn: Connection, merchant_id: int | None = None, other_than: int | None = None) -> bool:
    """Whether any endpoint (of the merchant, when named; but ``other_than``) takes live traffic."""
    query = select(endpoints.c.id).where(endpoints.c.mode == Mode.LIVE.value)
    if merchant_id is not None:
        query = query.where(endpoints.c.merchant_id == merchant_id)
    if other_than is not None:
        query = query.where(endpoints.c.id != other_than)
    return conn.execute(query.limit(1)).first() is not None


def load_endpoint(conn: Connection, vault: Vault, endpoint_id: int) -> Endpoint:
    """The endpoint with its merchant, whose control key is opened here: callers cache the endpoint
    (``runtime.EndpointDirectory``), so a request does not decrypt."""
    row = _endpoint_row(conn, endpoint_id)
    merchant_row = conn.execute(select(merchants).where(merchants.c.id == row["merchant_id"])).mappings().one()
    merchant = _merchant(merchant_row, vault)
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


def list_endpoints(conn: Connection, vault: Vault) -> list[Endpoint]:
    ids = conn.execute(select(endpoints.c.id).order_by(endpoints.c.id)).scalars().all()
    return [load_endpoint(conn, vault, endpoint_id) for endpoint_id in ids]


def endpoint_kind(conn: Connection, endpoint_id: int) -> str:
    """ "endpoint" or "group"; ``NotFound`` for neither."""
    return str(_endpoint_row(conn, endpoint_id)["kind"])


def _endpoint_row(conn: Connection, endpoint_id: int) -> Record:
    row = conn.execute(select(endpoints).where(endpoints.c.id == endpoint_id)).mappings().first()
    if row is None:
        raise NotFound(f"no endpoint or group {endpoint_id}")
    return row


def _merchant(row: Record, vault: Vault) -> Merchant:
    key = vault.decrypt(row["control_key_sealed"], control_key_context(row["id"]))
    networks = tuple(parse_network(text) for text in (row["allowed_networks"] or "").split(",") if text)
    return Merchant(row["id"], row["login"], key, bool(row["classic"]), networks)


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
