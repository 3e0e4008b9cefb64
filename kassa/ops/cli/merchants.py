"""Merchants and where they take payments: ``kassa merchant``, ``kassa endpoint``, ``kassa group``."""

from __future__ import annotations

import secrets
from typing import Any

import click
from sqlalchemy import Connection

from kassa.clock import now_ms
from kassa.domain import money
from kassa.domain.acquirers import route_problem
from kassa.domain.merchants import (
    MIN_CONTROL_KEY_LENGTH,
    Endpoint,
    Merchant,
    Mode,
    Network,
    control_key_problem,
    parse_network,
)
from kassa.domain.operators import Action
from kassa.domain.routing import RouteProblem, Routing, Stop, changes, parse_cascade, parse_route, render_cascade
from kassa.ops.cli.common import cli_actor, emit, json_option, read, vault, write
from kassa.storage import acquirers as acquirer_store
from kassa.storage import audit_log
from kassa.storage import merchants as merchant_store


@click.group()
def merchant() -> None:
    """Merchants: login and control key."""


def _merchant_dict(m: Merchant) -> dict[str, Any]:
    return {
        "id": m.id,
        "login": m.login,
        "control_key": m.control_key,
        "classic": m.classic,
        "allowed_networks": [str(network) for network in m.allowed_networks],
    }


def _networks_text(m: Merchant) -> str:
    return ", ".join(str(network) for network in m.allowed_networks) or "any"


@merchant.command("create")
@click.option("--login", required=True)
@click.option(
    "--control-key",
    default=None,
    help=f"At least {MIN_CONTROL_KEY_LENGTH} characters. Default: a random 32-character key.",
)
@click.option("--classic", is_flag=True, help="Answer non-JSON clients in the classic key=value format.")
@json_option
def merchant_create(login: str, control_key: str | None, classic: bool, as_json: bool) -> None:
    """Create a merchant."""
    key = control_key or secrets.token_hex(16)
    problem = control_key_problem(key)
    if problem:
        raise click.BadParameter(problem, param_hint="--control-key")
    sealer = vault()
    created = write(
        lambda conn: merchant_store.create_merchant(conn, sealer, login, key, classic, now_ms()),
        f"login {login} is taken",
    )
    emit(
        as_json,
        _merchant_dict(created),
        [f"merchant {created.login} created, control key {created.control_key}"],
    )


@merchant.command("list")
@json_option
def merchant_list(as_json: bool) -> None:
    """List merchants."""
    opener = vault()
    found = read(lambda conn: merchant_store.list_merchants(conn, opener))
    emit(
        as_json,
        [_merchant_dict(m) for m in found],
        [f"{m.id}\t{m.login}\tclassic={m.classic}\tallowed networks: {_networks_text(m)}" for m in found],
    )


@merchant.command("show")
@click.option("--login", required=True)
@json_option
def merchant_show(login: str, as_json: bool) -> None:
    """Show one merchant."""
    opener = vault()
    found = read(lambda conn: merchant_store.merchant_by_login(conn, opener, login))
    emit(as_json, _merchant_dict(found), _merchant_lines(found))


def _merchant_lines(m: Merchant) -> list[str]:
    return [f"merchant {m.login} (id {m.id})", f"classic: {m.classic}", f"allowed networks: {_networks_text(m)}"]


def _parse_networks(_ctx: click.Context, _param: click.Parameter, values: tuple[str, ...]) -> list[Network]:
    try:
        return [parse_network(value) for value in values]
    except ValueError as problem:
        raise click.BadParameter(str(problem)) from None


@merchant.command("update")
@click.option("--login", required=True)
@click.option(
    "--allow-network",
    "networks",
    multiple=True,
    callback=_parse_networks,
    help="An address or network (CIDR) API requests may come from; repeat for several. Replaces the list.",
)
@click.option("--allow-any-network", is_flag=True, help="Clear the list: API requests from anywhere.")
@json_option
def merchant_update(login: str, networks: list[Network], allow_any_network: bool, as_json: bool) -> None:
    """Change a merchant's allowed networks (endpoint caches pick it up within KASSA_ENDPOINT_CACHE_SECONDS)."""
    if bool(networks) == allow_any_network:
        raise click.UsageError("give --allow-network (one or more) or --allow-any-network")
    opener = vault()
    updated = write(lambda conn: merchant_store.set_allowed_networks(conn, opener, login, networks))
    emit(as_json, _merchant_dict(updated), _merchant_lines(updated))


@click.group()
def endpoint() -> None:
    """Endpoints (one currency each) and endpoint groups."""


def _minor(text: str | None, currency: str) -> int | None:
    if text is None:
        return None
    try:
        return money.parse_amount(text, money.currency(currency))
    except money.AmountError as problem:
        raise click.BadParameter(str(problem)) from None


def _endpoint_dict(e: Endpoint) -> dict[str, Any]:
    return {
        "id": e.id,
        "merchant": e.merchant.login,
        "kind": "group" if e.is_group else "endpoint",
        "currency": e.currency,
        "mode": e.mode.value,
        "classic": e.classic,
        "descriptor": e.descriptor,
        "min_amount": e.min_amount,
        "max_amount": e.max_amount,
        "members": [m.id for m in e.members],
        "replay_window": e.replay_window_seconds,
    }


def _window_text(e: Endpoint) -> str:
    return f"{e.replay_window_seconds}s" if e.replay_window_seconds else "off"


# Within a day, as Idempotency-Key answers are kept: longer, a legitimate repeat would be mistaken for
# a replay long after anyone could still be retrying.
_WINDOW = click.IntRange(0, 24 * 3600)
_WINDOW_HELP = (
    "Seconds within which a capture, return, void or make-rebill repeating an earlier one's signed "
    "values gets the earlier answer instead of moving money again (0: off, the default)."
)


@endpoint.command("create")
@click.option("--merchant", "login", required=True, help="The owning merchant's login.")
@click.option("--currency", required=True)
@click.option("--id", "endpoint_id", type=int, default=None)
@click.option("--mode", type=click.Choice([m.value for m in Mode]), default="sandbox")
@click.option("--classic", is_flag=True)
@click.option("--descriptor", default="")
@click.option("--min-amount", default=None, help="Decimal, in the endpoint's currency.")
@click.option("--max-amount", default=None, help="Decimal, in the endpoint's currency.")
@click.option("--multi-capture", is_flag=True, help="Allow several partial captures of one preauth.")
@click.option("--replay-window", type=_WINDOW, default=0, help=_WINDOW_HELP)
@click.option(
    "--connection",
    "connections",
    multiple=True,
    metavar="NAME",
    help="An acquirer connection payments go to (`kassa acquirer list`); repeat it for several, in the order "
    "payments try them. A live endpoint needs an enabled ISO 8583 one; a sandbox endpoint given none uses the "
    "sandbox.",
)
@json_option
def endpoint_create(
    login: str,
    currency: str,
    endpoint_id: int | None,
    mode: str,
    classic: bool,
    descriptor: str,
    min_amount: str | None,
    max_amount: str | None,
    multi_capture: bool,
    replay_window: int,
    connections: tuple[str, ...],
    as_json: bool,
) -> None:
    """Create an endpoint for one currency, with its acquirer connections."""
    try:
        code = money.currency(currency).code
    except money.AmountError as problem:
        raise click.BadParameter(str(problem), param_hint="--currency") from None
    if Mode(mode) is Mode.LIVE and not connections:
        raise click.UsageError(
            "a live endpoint needs its acquirer connections: give --connection NAME, an enabled ISO 8583 "
            "connection (`kassa acquirer list`), once for each, in the order payments try them"
        )
    low, high = _minor(min_amount, code), _minor(max_amount, code)
    opener = vault()

    def create(conn: Connection) -> tuple[Endpoint, list[str]]:
        owner = merchant_store.merchant_id(conn, login)
        spec = merchant_store.EndpointSpec(
            owner, code, Mode(mode), classic, descriptor, low, high, multi_capture, endpoint_id, replay_window
        )
        route = [acquirer_store.by_name(conn, name) for name in connections]
        created = merchant_store.create_endpoint(conn, spec, now_ms(), route)
        routed = [c.name for c in acquirer_store.route(conn, created)]
        return merchant_store.load_endpoint(conn, opener, created), routed

    try:
        created, routed = write(create, f"endpoint id {endpoint_id} is taken")
    except merchant_store.Refused as refused:
        raise click.BadParameter(str(refused), param_hint="--connection") from None
    emit(
        as_json,
        {**_endpoint_dict(created), "connections": routed},
        [f"endpoint {created.id} ({code}, {mode}) created for {login}, connections: {', '.join(routed)}"],
    )


@endpoint.command("update")
@click.option("--id", "endpoint_id", type=int, required=True)
@click.option("--replay-window", type=_WINDOW, required=True, help=_WINDOW_HELP)
@json_option
def endpoint_update(endpoint_id: int, replay_window: int, as_json: bool) -> None:
    """Change an endpoint's settings. Running gateways see the change within KASSA_ENDPOINT_CACHE_SECONDS."""
    opener = vault()
    updated = write(lambda conn: merchant_store.set_replay_window(conn, opener, endpoint_id, replay_window))
    emit(as_json, _endpoint_dict(updated), [f"endpoint {updated.id}: replay window {_window_text(updated)}"])


@endpoint.command("list")
@json_option
def endpoint_list(as_json: bool) -> None:
    """List endpoints and groups."""
    opener = vault()
    found = read(lambda conn: merchant_store.list_endpoints(conn, opener))
    emit(
        as_json,
        [_endpoint_dict(e) for e in found],
        [
            f"{e.id}\t{'group' if e.is_group else e.currency}\t{e.mode.value}\t{e.merchant.login}\t"
            f"replay-window={_window_text(e)}\t{e.descriptor}"
            for e in found
        ],
    )


@endpoint.command("connections")
@click.option("--id", "endpoint_id", type=int, required=True)
@click.option(
    "--cascade",
    help="Action codes that send a payment on to the next connection, comma-separated; 'none', or 'default' "
    "(907,909,911,100).",
)
@click.argument("entries", nargs=-1)
@json_option
def endpoint_connections(endpoint_id: int, cascade: str | None, entries: tuple[str, ...], as_json: bool) -> None:
    """Show an endpoint's routing: its acquirer connections in the order payments try them, each with its
    conditions, and its cascade list. With ENTRIES, replace the connections by those, each written
    NAME or NAME[conditions], for example 'acq-eu[brand=VISA,MASTERCARD; bin=400000-499999; currency=EUR;
    amount=100-500000; kind=payment]' (amounts in minor units). The sandbox connection serves sandbox
    endpoints only, and a live endpoint needs an enabled ISO 8583 connection (`kassa acquirer`)."""
    try:
        chosen = parse_route(entries) if entries else None
    except RouteProblem as unread:
        raise click.BadParameter(str(unread), param_hint="ENTRIES") from None
    if cascade is not None:
        try:
            parse_cascade(cascade)
        except RouteProblem as unread:
            raise click.BadParameter(str(unread), param_hint="--cascade") from None

    def change(conn: Connection) -> Routing:
        before, after = acquirer_store.change_routing(conn, endpoint_id, chosen, cascade)
        was, now = changes(before, after)
        target = f"endpoint {endpoint_id}"
        audit_log.append(conn, audit_log.Entry(cli_actor(), _CONNECTIONS, target, before=was, after=now), now_ms())
        return after

    try:
        if chosen is None and cascade is None:
            found = read(lambda conn: acquirer_store.routing(conn, endpoint_id))
        else:
            found = write(change)
    except acquirer_store.Refused as refused:
        raise click.ClickException(str(refused)) from None
    problem = route_problem(found.mode, found.connections)
    lines = [f"endpoint {endpoint_id}: {'no connections' if not found.stops else ''}".rstrip()]
    lines += [f"  {n}. {stop.render()}{_disabled(stop)}" for n, stop in enumerate(found.stops, start=1)]
    lines.append(f"  cascade on: {render_cascade(found.cascade)}")
    if problem:
        lines.append(f"warning: endpoint {endpoint_id}: {problem}")
    shown = {"endpoint": endpoint_id, "connections": [c.name for c in found.connections], **found.as_dict()}
    emit(as_json, {**shown, "problem": problem}, lines)


_CONNECTIONS = Action.ENDPOINT_CONNECTIONS.code


def _disabled(stop: Stop) -> str:
    return "" if stop.connection.enabled else " (disabled)"


@click.group()
def group() -> None:
    """Endpoint groups: one id that picks a member endpoint by currency."""


@group.command("create")
@click.option("--merchant", "login", required=True)
@click.option("--endpoints", required=True, help="Comma-separated member endpoint ids.")
@json_option
def group_create(login: str, endpoints: str, as_json: bool) -> None:
    """Create an endpoint group."""
    try:
        member_ids = [int(part) for part in endpoints.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter("must be endpoint ids separated by commas", param_hint="--endpoints") from None

    opener = vault()

    def create(conn: Connection) -> Endpoint:
        group_id = merchant_store.create_group(conn, merchant_store.merchant_id(conn, login), member_ids, now_ms())
        return merchant_store.load_endpoint(conn, opener, group_id)

    created = write(create)
    emit(as_json, _endpoint_dict(created), [f"group {created.id} created with endpoints {member_ids}"])


COMMANDS = (merchant, endpoint, group)
