"""Acquirer connections and endpoints' routes as the database keeps them, on SQLite and PostgreSQL: the
built-in sandbox every database has, settings read back as written, the secret sealed and opened only on
purpose, routes in order and held to the rule."""

from __future__ import annotations

from dataclasses import replace

import pytest
from cryptography.exceptions import InvalidTag
from sqlalchemy import Connection, select
from sqlalchemy.exc import IntegrityError

from kassa.domain.acquirers import Kind, SettingProblem, read_link
from kassa.domain.action_codes import ActionCode
from kassa.domain.merchants import Mode
from kassa.domain.routing import Entry, RouteProblem, parse_route
from kassa.storage import acquirers
from kassa.storage import merchants as merchant_store
from kassa.storage.database import Database
from kassa.storage.tables import acquirer_connections
from tests.support.databases import TEST_VAULT, shop_endpoint

LINK = read_link(
    {"host": "acquirer.example", "port": "5000", "acquiring_institution_id": "123456", "terminal_id": "TERM0001",
     "card_acceptor_id": "SHOP00000000001", "mcc": "5999"}
)  # fmt: skip
KEY = "-----BEGIN PRIVATE KEY-----\nMIIE...\n-----END PRIVATE KEY-----"


def _create(db: Database, name: str, secret: str | None = None) -> acquirers.AcquirerConnection:
    return db.write_sync(lambda conn: acquirers.create(conn, TEST_VAULT, name, LINK, secret, 1000))


def test_every_database_has_the_built_in_sandbox(db: Database) -> None:
    sandbox = db.read_sync(lambda conn: acquirers.by_name(conn, "sandbox"))
    assert (sandbox.kind, sandbox.link, sandbox.enabled, sandbox.has_secret) == (Kind.SANDBOX, None, True, False)


def test_a_connection_is_read_back_with_its_settings(db: Database) -> None:
    created = _create(db, "bank")
    assert (created.name, created.kind, created.link, created.enabled) == ("bank", Kind.ISO8583, LINK, True)
    assert db.read_sync(lambda conn: acquirers.by_name(conn, "bank")) == created
    assert [c.name for c in db.read_sync(acquirers.listing)] == ["bank", "sandbox"]


def test_a_name_is_taken_once(db: Database) -> None:
    _create(db, "bank")
    with pytest.raises(IntegrityError):
        _create(db, "bank")


def test_an_unknown_name_is_not_found(db: Database) -> None:
    with pytest.raises(merchant_store.NotFound, match="no acquirer connection named 'nowhere'"):
        db.read_sync(lambda conn: acquirers.by_name(conn, "nowhere"))


def test_the_secret_is_sealed_bound_to_its_connection_and_opened_on_purpose_alone(db: Database) -> None:
    bank, other = _create(db, "bank", KEY), _create(db, "other")
    assert (bank.has_secret, other.has_secret) == (True, False)
    stored = db.read_sync(
        lambda conn: conn.execute(
            select(acquirer_connections.c.secret_sealed).where(acquirer_connections.c.id == bank.id)
        )
    ).scalar_one()
    assert b"PRIVATE KEY" not in stored
    assert db.read_sync(lambda conn: acquirers.secret_of(conn, TEST_VAULT, bank.id)) == KEY
    assert db.read_sync(lambda conn: acquirers.secret_of(conn, TEST_VAULT, other.id)) is None

    def copy_to_other(conn: Connection) -> None:
        conn.execute(
            acquirer_connections.update().where(acquirer_connections.c.id == other.id).values(secret_sealed=stored)
        )

    db.write_sync(copy_to_other)
    with pytest.raises(InvalidTag):  # a ciphertext copied into another row does not open
        db.read_sync(lambda conn: acquirers.secret_of(conn, TEST_VAULT, other.id))


def test_settings_secret_and_state_change_and_the_secret_can_be_removed(db: Database) -> None:
    bank = _create(db, "bank", KEY)
    before, after = db.write_sync(
        lambda conn: acquirers.change(conn, TEST_VAULT, "bank", {"sockets": "4", "tls": True}, None, True, 2000)
    )
    assert (before, after) == (bank, replace(bank, link=replace(LINK, sockets=4, tls=True), has_secret=False))
    _, disabled = db.write_sync(lambda conn: acquirers.set_enabled(conn, "bank", False, 3000))
    assert disabled == replace(after, enabled=False)
    _, resealed = db.write_sync(lambda conn: acquirers.change(conn, TEST_VAULT, "bank", {}, "new key", False, 4000))
    assert (
        resealed.has_secret and db.read_sync(lambda conn: acquirers.secret_of(conn, TEST_VAULT, bank.id)) == "new key"
    )


def test_a_bad_setting_is_refused_naming_it_and_the_sandbox_takes_none(db: Database) -> None:
    _create(db, "bank")
    with pytest.raises(SettingProblem, match="port") as refused:
        db.write_sync(lambda conn: acquirers.change(conn, TEST_VAULT, "bank", {"port": "0"}, None, False, 2000))
    assert refused.value.field == "port"
    with pytest.raises(acquirers.Refused, match="sandbox is a sandbox connection: it has no settings"):
        db.write_sync(lambda conn: acquirers.change(conn, TEST_VAULT, "sandbox", {"port": "1"}, None, False, 2000))
    with pytest.raises(acquirers.Refused, match="no settings and no secret"):
        db.write_sync(lambda conn: acquirers.change(conn, TEST_VAULT, "sandbox", {}, "key", False, 2000))


def _live_endpoint(db: Database, merchant_id: int, names: list[str]) -> int:
    """A live EUR endpoint of the merchant, created with the connections ``names``."""
    spec = merchant_store.EndpointSpec(merchant_id, "EUR", Mode.LIVE, False, "", None, None, False)

    def create(conn: Connection) -> int:
        return merchant_store.create_endpoint(conn, spec, 0, [acquirers.by_name(conn, name) for name in names])

    return db.write_sync(create)


def test_endpoints_whose_route_a_disabled_connection_breaks_are_named(db: Database) -> None:
    merchant_id, sandbox_endpoint = db.write_sync(shop_endpoint)
    bank = _create(db, "bank")
    live = _live_endpoint(db, merchant_id, ["bank"])
    db.write_sync(lambda conn: acquirers.set_route(conn, sandbox_endpoint, _route("bank", "sandbox")))
    assert db.read_sync(lambda conn: acquirers.route_problems(conn, bank.id)) == {}
    db.write_sync(lambda conn: acquirers.set_enabled(conn, "bank", False, 2000))
    assert db.read_sync(lambda conn: acquirers.route_problems(conn, bank.id)) == {
        live: "a live endpoint needs at least one enabled ISO 8583 connection"
    }


def test_a_new_sandbox_endpoint_is_routed_to_the_sandbox_and_a_live_one_to_the_connections_given(
    db: Database,
) -> None:
    merchant_id, sandbox_endpoint = db.write_sync(shop_endpoint)
    for name in ("bank", "other"):
        _create(db, name)
    live_endpoint = _live_endpoint(db, merchant_id, ["other", "bank"])
    found = db.read_sync(lambda conn: acquirers.routings(conn, [sandbox_endpoint, live_endpoint]))
    assert {endpoint: [c.name for c in routing.connections] for endpoint, routing in found.items()} == {
        sandbox_endpoint: ["sandbox"],
        live_endpoint: ["other", "bank"],
    }


@pytest.mark.parametrize(
    ("names", "message"),
    [
        ([], "a live endpoint needs at least one enabled ISO 8583 connection"),
        (["sandbox"], "a sandbox: it serves sandbox endpoints only"),
        (["off"], "a live endpoint needs at least one enabled ISO 8583 connection"),
        (["bank", "bank"], "connection bank is listed twice"),
    ],
)
def test_a_live_endpoint_the_rule_refuses_is_not_created(db: Database, names: list[str], message: str) -> None:
    merchant_id, _endpoint_id = db.write_sync(shop_endpoint)
    for name in ("bank", "off"):
        _create(db, name)
    db.write_sync(lambda conn: acquirers.set_enabled(conn, "off", False, 2000))
    with pytest.raises(merchant_store.Refused, match=message):
        _live_endpoint(db, merchant_id, names)
    listed = db.read_sync(lambda conn: merchant_store.endpoints_of(conn, TEST_VAULT, merchant_id))
    assert [e.mode for e in listed] == [Mode.SANDBOX]


def test_a_route_is_kept_in_the_order_given_and_replaced_whole(db: Database) -> None:
    _merchant_id, endpoint_id = db.write_sync(shop_endpoint)
    for name in ("bank", "other"):
        _create(db, name)
    before, after = db.write_sync(
        lambda conn: acquirers.set_route(conn, endpoint_id, _route("other", "sandbox", "bank"))
    )
    assert ([c.name for c in before.connections], [c.name for c in after.connections]) == (
        ["sandbox"],
        ["other", "sandbox", "bank"],
    )
    assert [c.name for c in db.read_sync(lambda conn: acquirers.route(conn, endpoint_id))] == [
        "other",
        "sandbox",
        "bank",
    ]
    db.write_sync(lambda conn: acquirers.set_route(conn, endpoint_id, _route("bank", "other")))
    assert [c.name for c in db.read_sync(lambda conn: acquirers.route(conn, endpoint_id))] == ["bank", "other"]
    bank = db.read_sync(lambda conn: acquirers.by_name(conn, "bank"))
    assert db.read_sync(lambda conn: acquirers.endpoints_using(conn, bank.id)) == [(endpoint_id, Mode.SANDBOX)]


@pytest.mark.parametrize(
    ("names", "message"),
    [
        (["sandbox"], "a sandbox: it serves sandbox endpoints only"),
        ([], "a live endpoint needs at least one enabled ISO 8583 connection"),
        (["bank", "bank"], "connection bank is listed twice"),
        (["nowhere"], "no acquirer connection named 'nowhere'"),
    ],
)
def test_a_route_the_rule_refuses_leaves_the_old_one(db: Database, names: list[str], message: str) -> None:
    merchant_id, _endpoint_id = db.write_sync(shop_endpoint)
    _create(db, "bank")
    live = _live_endpoint(db, merchant_id, ["bank"])
    with pytest.raises((acquirers.Refused, merchant_store.NotFound), match=message):
        db.write_sync(lambda conn: acquirers.set_route(conn, live, _route(*names)))
    assert [c.name for c in db.read_sync(lambda conn: acquirers.route(conn, live))] == ["bank"]


def test_a_group_and_an_unknown_endpoint_have_no_route_to_set(db: Database) -> None:
    merchant_id, endpoint_id = db.write_sync(shop_endpoint)
    group = db.write_sync(lambda conn: merchant_store.create_group(conn, merchant_id, [endpoint_id], 0))
    with pytest.raises(acquirers.Refused, match="is a group: its member endpoints have connections"):
        db.write_sync(lambda conn: acquirers.set_route(conn, group, _route("sandbox")))
    with pytest.raises(merchant_store.NotFound, match="no endpoint or group 999999"):
        db.write_sync(lambda conn: acquirers.set_route(conn, 999999, _route("sandbox")))


def _route(*names: str) -> list[Entry]:
    return [Entry(name) for name in names]


def test_a_routes_conditions_and_cascade_list_are_kept_as_written(db: Database) -> None:
    _merchant_id, endpoint_id = db.write_sync(shop_endpoint)
    _create(db, "bank")
    entries = parse_route(["bank[currency=EUR; bin=400000-499999; kind=payment], sandbox"])
    db.write_sync(lambda conn: acquirers.change_routing(conn, endpoint_id, entries, "911,907"))
    routing = db.read_sync(lambda conn: acquirers.routing(conn, endpoint_id))
    assert [stop.render() for stop in routing.stops] == [
        "bank[bin=400000-499999; currency=EUR; kind=payment]",
        "sandbox",
    ]
    assert routing.cascade == (ActionCode.ISSUER_TIMED_OUT, ActionCode.ISSUER_INOPERATIVE)
    db.write_sync(lambda conn: acquirers.change_routing(conn, endpoint_id, None, "default"))
    routing = db.read_sync(lambda conn: acquirers.routing(conn, endpoint_id))
    assert (len(routing.stops), routing.cascade) == (2, None)
    assert routing.cascade_codes == {"907", "909", "911", "100"}


def test_a_cascade_list_the_rule_refuses_changes_nothing(db: Database) -> None:
    _merchant_id, endpoint_id = db.write_sync(shop_endpoint)
    with pytest.raises(RouteProblem, match="cascade code '999' is none of the action codes"):
        db.write_sync(lambda conn: acquirers.change_routing(conn, endpoint_id, _route("sandbox"), "999"))
    assert db.read_sync(lambda conn: acquirers.routing(conn, endpoint_id)).cascade is None
