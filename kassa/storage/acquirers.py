"""Queries on acquirer connections and endpoints' routes (their ordered connections): operator writes,
and the reads routing will make. A connection's secret is sealed by the vault and opened by ``secret_of``
alone; every other read says only whether one is set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sqlalchemy import Connection, delete, insert, select, update

from kassa.domain.acquirers import Connection as AcquirerConnection
from kassa.domain.acquirers import Kind, LinkSettings, read_link, route_problem
from kassa.domain.action_codes import ActionCode
from kassa.domain.merchants import Mode
from kassa.domain.routing import Entry, Routing, Stop, parse_cascade, parse_conditions, render_cascade
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


class Refused(ValueError):
    """A change the rules refuse (a route ``domain.acquirers.route_problem`` refuses, settings for the
    sandbox); the message says why."""


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


def change(
    conn: Connection,
    vault: Vault,
    name: str,
    values: Mapping[str, str | bool],
    secret: str | None,
    clear_secret: bool,
    now_ms: int,
) -> tuple[AcquirerConnection, AcquirerConnection]:
    """Changes the settings ``values`` names (as ``domain.acquirers.read_link`` reads them, a
    ``SettingProblem`` naming the one at fault), seals ``secret`` in place of any, or removes the secret;
    returns the connection before and after."""
    before = by_name(conn, name)
    if before.link is None and (values or secret is not None or clear_secret):
        raise Refused(f"{name} is a sandbox connection: it has no settings and no secret")
    if values:
        set_link(conn, before.id, read_link(values, before.link), now_ms)
    if secret is not None or clear_secret:
        set_secret(conn, vault, before.id, secret, now_ms)
    return before, by_id(conn, before.id)


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


def set_enabled(
    conn: Connection, name: str, enabled: bool, now_ms: int
) -> tuple[AcquirerConnection, AcquirerConnection]:
    """Enables or disables the connection (a disabled one stays in routes but takes no payment); returns it
    before and after."""
    before = by_name(conn, name)
    conn.execute(
        update(acquirer_connections)
        .where(acquirer_connections.c.id == before.id)
        .values(enabled=enabled, updated_at_ms=now_ms)
    )
    return before, by_id(conn, before.id)


def secret_of(conn: Connection, vault: Vault, connection_id: int) -> str | None:
    """The connection's secret in clear, for the link that uses it: never for showing."""
    query = select(acquirer_connections.c.secret_sealed).where(acquirer_connections.c.id == connection_id)
    sealed = conn.execute(query).scalar()
    return None if sealed is None else vault.decrypt(sealed, secret_context(connection_id))


def routings(conn: Connection, endpoint_ids: Sequence[int]) -> dict[int, Routing]:
    """Each endpoint's routing (an empty route for one that has none); a group's id is skipped: its members
    have routes."""
    heads = conn.execute(
        select(endpoints.c.id, endpoints.c.mode, endpoints.c.cascade_codes).where(
            endpoints.c.id.in_(endpoint_ids), endpoints.c.kind != "group"
        )
    ).all()
    stops: dict[int, list[Stop]] = {row.id: [] for row in heads}
    query = (
        _READ.add_columns(endpoint_connections.c.endpoint_id, endpoint_connections.c.conditions)
        .join(endpoint_connections, endpoint_connections.c.connection_id == acquirer_connections.c.id)
        .where(endpoint_connections.c.endpoint_id.in_(list(stops)))
        .order_by(endpoint_connections.c.endpoint_id, endpoint_connections.c.position)
    )
    for row in conn.execute(query).mappings():
        connection = _connection(row)
        # Stored as ``Conditions.render`` wrote them, so they read back.
        stops[row["endpoint_id"]].append(Stop(connection, parse_conditions(row["conditions"] or "", connection.name)))
    return {
        row.id: Routing(Mode(row.mode), tuple(stops[row.id]), parse_cascade(row.cascade_codes or "")) for row in heads
    }


def routing(conn: Connection, endpoint_id: int) -> Routing:
    """The endpoint's routing; ``NotFound`` for no endpoint, ``Refused`` for a group."""
    endpoint_mode(conn, endpoint_id)
    return routings(conn, [endpoint_id])[endpoint_id]


def route(conn: Connection, endpoint_id: int) -> list[AcquirerConnection]:
    return list(routing(conn, endpoint_id).connections)


def endpoint_mode(conn: Connection, endpoint_id: int) -> Mode:
    """The mode of an endpoint that has a route (a group has none: its members do)."""
    row = conn.execute(select(endpoints.c.kind, endpoints.c.mode).where(endpoints.c.id == endpoint_id)).first()
    if row is None:
        raise merchant_store.NotFound(f"no endpoint or group {endpoint_id}")
    if row.kind == "group":
        raise Refused(f"{endpoint_id} is a group: its member endpoints have connections")
    return Mode(row.mode)


def set_route(conn: Connection, endpoint_id: int, entries: Sequence[Entry]) -> tuple[Routing, Routing]:
    """Replaces the endpoint's route by the connections ``entries`` name, in that order, with their
    conditions, if the rule allows it for the endpoint's mode (else ``Refused``); returns the routing before
    and after."""
    before = routing(conn, endpoint_id)
    chosen = [by_name(conn, entry.name) for entry in entries]
    problem = route_problem(before.mode, chosen)
    if problem:
        raise Refused(f"endpoint {endpoint_id}: {problem}")
    conn.execute(delete(endpoint_connections).where(endpoint_connections.c.endpoint_id == endpoint_id))
    conn.execute(
        insert(endpoint_connections),
        [
            {
                "endpoint_id": endpoint_id,
                "position": position,
                "connection_id": connection.id,
                "conditions": entry.conditions.render() or None,
            }
            for position, (connection, entry) in enumerate(zip(chosen, entries, strict=True), start=1)
        ],
    )
    return before, routing(conn, endpoint_id)


def change_routing(
    conn: Connection, endpoint_id: int, entries: Sequence[Entry] | None, cascade: str | None
) -> tuple[Routing, Routing]:
    """Replaces the route by ``entries`` and the cascade list by the codes ``cascade`` writes
    (``domain.routing.parse_cascade``), each unless None; returns the routing before and after."""
    before = after = routing(conn, endpoint_id)
    if entries is not None:
        after = set_route(conn, endpoint_id, entries)[1]
    if cascade is not None:
        after = set_cascade(conn, endpoint_id, parse_cascade(cascade))[1]
    return before, after


def set_cascade(conn: Connection, endpoint_id: int, codes: Sequence[ActionCode] | None) -> tuple[Routing, Routing]:
    """Sets the action codes that send a first authorization on to the next connection (None: the default
    of CONTRACT §16); returns the routing before and after."""
    before = routing(conn, endpoint_id)
    stored = None if codes is None else render_cascade(codes)
    conn.execute(update(endpoints).where(endpoints.c.id == endpoint_id).values(cascade_codes=stored))
    return before, routing(conn, endpoint_id)


def endpoints_using(conn: Connection, connection_id: int) -> list[tuple[int, Mode]]:
    """The endpoints whose route lists the connection, by id, with their mode."""
    query = (
        select(endpoints.c.id, endpoints.c.mode)
        .join(endpoint_connections, endpoint_connections.c.endpoint_id == endpoints.c.id)
        .where(endpoint_connections.c.connection_id == connection_id)
        .order_by(endpoints.c.id)
    )
    return [(int(endpoint_id), Mode(mode)) for endpoint_id, mode in conn.execute(query)]


def route_problems(conn: Connection, connection_id: int) -> dict[int, str]:
    """The endpoints listing the connection whose routes the rule now refuses (one disabled, or switched
    to live), with what is wrong: what an operator must fix before routing uses them."""
    found = {}
    for endpoint_id, mode in endpoints_using(conn, connection_id):
        problem = route_problem(mode, route(conn, endpoint_id))
        if problem:
            found[endpoint_id] = problem
    return found


def _connection(row: Record) -> AcquirerConnection:
    kind = Kind(row["kind"])
    link = None if kind is Kind.SANDBOX else LinkSettings(**{name: row[name] for name in _LINK_COLUMNS})
    return AcquirerConnection(row["id"], row["name"], kind, link, bool(row["enabled"]), bool(row["has_secret"]))
