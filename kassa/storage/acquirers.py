"""Queries on acquirer connections and endpoints' routes (their ordered connections): operator writes,
and the reads routing will make. A connection's secret is sealed by the vault and opened by ``secret_of``
alone; every other read says only whether one is set."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, insert, select, update

from kassa.domain.acquirers import Connection as AcquirerConnection
from kassa.domain.acquirers import Kind, LinkSettings, route_problem
from kassa.domain.merchants import Mode
from kassa.storage import merchants as merchant_store
from kassa.storage.prepared import Record
from kassa.storage.tables import acquirer_connections, endpoint_connections, endpoints
from kassa.vault.keys import Vault

_LINK_COLUMNS = tuple(LinkSettings.__dataclass_fields__)  # named as the settings are
_READ = select(
    *(c for c in acquirer_connections.c if c.name != "secret_sealed"),
    acquirer_connections.c.secret_sealed.is_not(None).label("has_secret"),
)


class NoConnection(merchant_store.NotFound):
    pass


class RouteRefused(ValueError):
    """A route the rule of ``domain.acquirers.route_problem`` refuses; the message says why."""


def secret_context(connection_id: int) -> str:
    return f"acquirer-secret/connection/{connection_id}"


def create(
    conn: Connection, vault: Vault, name: str, link: LinkSettings | None, secret: str | None, now_ms: int
) -> AcquirerConnection:
    """A connection of kind ISO 8583 with ``link``, or of kind sandbox without (and without a secret)."""
    kind = Kind.SANDBOX if link is None else Kind.ISO8583
    values = {"name": name, "kind": kind.value, "enabled": True, "created_at_ms": now_ms, "updated_at_ms": now_ms}
    inserted = conn.execute(insert(acquirer_connections).values(**values, **_link_values(link)))
    connection_id = int(inserted.inserted_primary_key[0])  # type: ignore[index]
    if secret is not None:
        set_secret(conn, vault, connection_id, secret, now_ms)
    return by_id(conn, connection_id)


def _link_values(link: LinkSettings | None) -> dict[str, object]:
    return link.as_dict() if link else dict.fromkeys(_LINK_COLUMNS)


def by_name(conn: Connection, name: str) -> AcquirerConnection:
    row = conn.execute(_READ.where(acquirer_connections.c.name == name)).mappings().first()
    if row is None:
        raise NoConnection(f"no acquirer connection named {name!r}")
    return _connection(row)


def by_id(conn: Connection, connection_id: int) -> AcquirerConnection:
    return _connection(conn.execute(_READ.where(acquirer_connections.c.id == connection_id)).mappings().one())


def listing(conn: Connection) -> list[AcquirerConnection]:
    return [_connection(row) for row in conn.execute(_READ.order_by(acquirer_connections.c.name)).mappings()]


def set_link(conn: Connection, connection_id: int, link: LinkSettings, now_ms: int) -> None:
    conn.execute(
        update(acquirer_connections)
        .where(acquirer_connections.c.id == connection_id)
        .values(updated_at_ms=now_ms, **_link_values(link))
    )


def set_secret(conn: Connection, vault: Vault, connection_id: int, secret: str | None, now_ms: int) -> None:
    """Seals ``secret`` for the connection, replacing any; None removes it."""
    sealed = None if secret is None else vault.encrypt(secret, secret_context(connection_id))
    conn.execute(
        update(acquirer_connections)
        .where(acquirer_connections.c.id == connection_id)
        .values(secret_sealed=sealed, updated_at_ms=now_ms)
    )


def set_enabled(conn: Connection, connection_id: int, enabled: bool, now_ms: int) -> None:
    conn.execute(
        update(acquirer_connections)
        .where(acquirer_connections.c.id == connection_id)
        .values(enabled=enabled, updated_at_ms=now_ms)
    )


def secret_of(conn: Connection, vault: Vault, connection_id: int) -> str | None:
    """The connection's secret in clear, for the link that uses it: never for showing."""
    query = select(acquirer_connections.c.secret_sealed).where(acquirer_connections.c.id == connection_id)
    sealed = conn.execute(query).scalar()
    return None if sealed is None else vault.decrypt(sealed, secret_context(connection_id))


def routes(conn: Connection, endpoint_ids: Sequence[int]) -> dict[int, list[AcquirerConnection]]:
    """Each endpoint's connections in route order (an empty list for one that has none)."""
    found: dict[int, list[AcquirerConnection]] = {endpoint_id: [] for endpoint_id in endpoint_ids}
    query = (
        _READ.add_columns(endpoint_connections.c.endpoint_id)
        .join(endpoint_connections, endpoint_connections.c.connection_id == acquirer_connections.c.id)
        .where(endpoint_connections.c.endpoint_id.in_(endpoint_ids))
        .order_by(endpoint_connections.c.endpoint_id, endpoint_connections.c.position)
    )
    for row in conn.execute(query).mappings():
        found[row["endpoint_id"]].append(_connection(row))
    return found


def route(conn: Connection, endpoint_id: int) -> list[AcquirerConnection]:
    return routes(conn, [endpoint_id])[endpoint_id]


def set_route(
    conn: Connection, endpoint_id: int, names: Sequence[str]
) -> tuple[list[AcquirerConnection], list[AcquirerConnection]]:
    """Replaces the endpoint's route by the connections ``names``, in that order, if the rule allows it
    for the endpoint's mode (else ``RouteRefused``); returns the route before and after."""
    row = conn.execute(select(endpoints.c.kind, endpoints.c.mode).where(endpoints.c.id == endpoint_id)).first()
    if row is None:
        raise merchant_store.NotFound(f"no endpoint or group {endpoint_id}")
    if row.kind == "group":
        raise RouteRefused(f"{endpoint_id} is a group: set the connections of its member endpoints")
    chosen = [by_name(conn, name) for name in names]
    problem = route_problem(Mode(row.mode), chosen)
    if problem:
        raise RouteRefused(f"endpoint {endpoint_id}: {problem}")
    before = route(conn, endpoint_id)
    conn.execute(delete(endpoint_connections).where(endpoint_connections.c.endpoint_id == endpoint_id))
    conn.execute(
        insert(endpoint_connections),
        [
            {"endpoint_id": endpoint_id, "position": position, "connection_id": connection.id}
            for position, connection in enumerate(chosen, start=1)
        ],
    )
    return before, chosen


def endpoints_using(conn: Connection, connection_id: int) -> list[tuple[int, Mode]]:
    """The endpoints whose route lists the connection, by id, with their mode."""
    query = (
        select(endpoints.c.id, endpoints.c.mode)
        .join(endpoint_connections, endpoint_connections.c.endpoint_id == endpoints.c.id)
        .where(endpoint_connections.c.connection_id == connection_id)
        .order_by(endpoints.c.id)
    )
    return [(int(endpoint_id), Mode(mode)) for endpoint_id, mode in conn.execute(query)]


def _connection(row: Record) -> AcquirerConnection:
    kind = Kind(row["kind"])
    link = None if kind is Kind.SANDBOX else LinkSettings(**{name: row[name] for name in _LINK_COLUMNS})
    return AcquirerConnection(row["id"], row["name"], kind, link, bool(row["enabled"]), bool(row["has_secret"]))
