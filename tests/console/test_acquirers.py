"""Acquirer connections in the console: admins create, change, disable and enable them and set an
endpoint's connections in order, as ``kassa acquirer`` and ``kassa endpoint connections`` then show; bad
settings are refused naming the field; the secret is never shown back; a viewer reads and changes nothing.
The pages show each ISO 8583 connection's link as the gateway processes that opened it report it, read
from the database: a console that opened no link shows it, and stops counting a process that died."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from kassa.domain.link_status import STALE_MS
from kassa.sandbox.acquirer_host import AcquirerHost
from tests.support.acquirer_host import host_on_a_thread, iso_connection, link_until
from tests.support.console import ConsoleClient, new_operator
from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant, new_merchant

SECRET = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIconsolesecret\n-----END PRIVATE KEY-----"


def _name() -> str:
    return f"acq-{uuid.uuid4().hex[:10]}"


def _fields(**changes: str) -> dict[str, str]:
    return {"kind": "iso8583", "host": "acquirer.example", "port": "5000", "acquiring_institution_id": "123456",
            "terminal_id": "TERM0001", "card_acceptor_id": "SHOP00000000001", "mcc": "5999", "response_timeout": "",
            "sockets": "", "dialect": "", **changes}  # fmt: skip


def _shown(gateway: Gateway, name: str) -> dict[str, Any]:
    found: dict[str, Any] = gateway.cli("acquirer", "show", "--name", name)
    return found


def _route(gateway: Gateway, endpoint_id: int) -> list[str]:
    found: list[str] = gateway.cli("endpoint", "connections", "--id", str(endpoint_id))["connections"]
    return found


def test_an_admin_creates_a_connection_with_a_secret_that_is_never_shown_back(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient]
) -> None:
    admin, name = console_as("admin"), _name()
    created = admin.post("/acquirers", {"name": name, **_fields(tls="1", terminal_id="T1"), "secret": SECRET})
    assert created.status_code == 303 and created.headers["location"] == f"/acquirers/{name}"
    shown = _shown(shared_gateway, name)
    assert (shown["host"], shown["tls"], shown["terminal_id"], shown["secret"]) == (
        "acquirer.example", True, "T1      ", True
    )  # fmt: skip
    assert (shown["response_timeout_ms"], shown["sockets"], shown["dialect"]) == (20000, 1, "reference")
    page = admin.get(f"/acquirers/{name}")
    assert page.status_code == 200 and "acquirer.example:5000, TLS on" in page.text and "set (never shown)" in page.text
    assert name in admin.get("/acquirers").text
    for text in (page.text, admin.get("/acquirers").text, admin.get("/audit", action="acquirer.create").text):
        assert "PRIVATE KEY" not in text and "consolesecret" not in text
    [(after,)] = run_sql(shared_gateway.database_url, f"SELECT after FROM audit_log WHERE target = 'acquirer {name}'")
    assert '"secret":true' in after and "PRIVATE" not in after


def test_bad_settings_are_refused_naming_the_field_and_the_secret_is_not_refilled(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient]
) -> None:
    admin, name = console_as("admin"), _name()
    cases = [
        ({"port": "0"}, "Port must be a whole number from 1 to 65535."),
        ({"host": ""}, "Host is required."),
        ({"terminal_id": "TERMINAL9"}, "Terminal id (field 41) must be 1 to 8 printable ASCII characters"),
        ({"card_acceptor_id": "S" * 16}, "Card acceptor id (field 42) must be 1 to 15 printable ASCII characters"),
        ({"mcc": "59"}, "Merchant category code (field 18) must be 4 digits."),
        ({"sockets": "12"}, "Sockets per process must be a whole number from 1 to 8."),
        ({"response_timeout": "-3"}, "Response timeout must be a number of seconds above 0"),
        ({"dialect": "acme"}, "Dialect: no dialect named &#39;acme&#39;."),
        ({"kind": "sandbox"}, "A sandbox connection has no settings"),
    ]
    for changes, message in cases:
        answer = admin.post("/acquirers", {"name": name, **_fields(**changes), "secret": SECRET})
        assert answer.status_code == 400 and message in answer.text, changes
        assert "PRIVATE KEY" not in answer.text
    bad_name = admin.post("/acquirers", {"name": "Acme Bank", **_fields()})
    assert bad_name.status_code == 400 and "Name must be 1 to 64 lower-case letters" in bad_name.text
    assert admin.post("/acquirers", {"name": "sandbox", **_fields()}).status_code == 409
    assert name not in str(shared_gateway.cli("acquirer", "list"))


def test_an_admin_changes_settings_replaces_and_removes_the_secret_and_each_change_is_audited(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient]
) -> None:
    admin, name = console_as("admin"), _name()
    shared_gateway.cli("acquirer", "create", "--name", name, "--host", "a.example", "--port", "1",
                       "--acquiring-institution-id", "1", "--terminal-id", "T1", "--card-acceptor-id", "C1",
                       "--mcc", "5999")  # fmt: skip
    changed = admin.post(f"/acquirers/{name}", _fields(sockets="3", response_timeout="2.5", secret=SECRET))
    assert changed.status_code == 303
    shown = _shown(shared_gateway, name)
    assert (shown["host"], shown["sockets"], shown["response_timeout_ms"], shown["secret"]) == (
        "acquirer.example", 3, 2500, True
    )  # fmt: skip
    refused = admin.post(f"/acquirers/{name}", _fields(port="99999"))
    assert refused.status_code == 400 and "Port must be a whole number" in refused.text
    unknown = admin.post(f"/acquirers/{name}", _fields(dialect="acme"))
    assert unknown.status_code == 400 and "Dialect: no dialect named" in unknown.text
    assert _shown(shared_gateway, name)["port"] == 5000
    kept = _fields(sockets="3", response_timeout="2.5", clear_secret="1")  # the form shows what is set
    assert admin.post(f"/acquirers/{name}", kept).status_code == 303
    assert _shown(shared_gateway, name)["secret"] is False
    audit = run_sql(
        shared_gateway.database_url,
        f"SELECT action, before, after FROM audit_log WHERE target = 'acquirer {name}' ORDER BY id",
    )
    assert [action for action, _, _ in audit] == ["acquirer.create", "acquirer.update", "acquirer.update"]
    _, before, after = audit[1]
    assert '"sockets":1' in before and '"sockets":3' in after and '"secret":"new"' in after
    assert (audit[2][1], audit[2][2]) == ('{"secret":true}', '{"secret":false}')
    assert "PRIVATE" not in str(audit)


def test_a_disabled_connection_is_shown_disabled_where_endpoints_list_it_and_enabled_again(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin, name = console_as("admin"), _name()
    assert admin.post("/acquirers", {"name": name, **_fields()}).status_code == 303
    answer = admin.post(
        f"/endpoints/{merchant.endpoint_id}/connections", {"connections": f"{name}, sandbox"}, from_page="/merchants"
    )
    assert answer.status_code == 303 and answer.headers["location"] == f"/merchants/{merchant.login}"
    assert _route(shared_gateway, merchant.endpoint_id) == [name, "sandbox"]
    assert admin.post(f"/acquirers/{name}/disable", {}).status_code == 303
    assert _shown(shared_gateway, name)["enabled"] is False
    assert f"{name}</a> (disabled)" in admin.get(f"/merchants/{merchant.login}").text
    assert f"{merchant.endpoint_id} (sandbox)" in admin.get(f"/acquirers/{name}").text
    assert admin.post(f"/acquirers/{name}/enable", {}).status_code == 303
    assert _shown(shared_gateway, name)["enabled"] is True
    actions = [
        a
        for (a,) in run_sql(
            shared_gateway.database_url, f"SELECT action FROM audit_log WHERE target = 'acquirer {name}' ORDER BY id"
        )
    ]
    assert actions == ["acquirer.create", "acquirer.disable", "acquirer.enable"]


def test_a_live_endpoints_connections_are_held_to_the_rule_and_its_page_says_what_is_missing(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin, first = console_as("admin"), _name()
    admin.post("/acquirers", {"name": first, **_fields()})
    live = shared_gateway.cli("endpoint", "create", "--merchant", merchant.login, "--currency", "EUR",
                              "--mode", "live", "--connection", first)  # fmt: skip
    shared_gateway.cli("acquirer", "disable", "--name", first)
    page = admin.get(f"/merchants/{merchant.login}").text
    assert "a live endpoint needs at least one enabled ISO 8583 connection" in page
    refused = admin.post(f"/endpoints/{live['id']}/connections", {"connections": "sandbox"})
    assert refused.status_code == 400
    assert "connection sandbox is a sandbox: it serves sandbox endpoints only" in refused.text
    assert ">sandbox</textarea>" in refused.text  # what was typed, to correct
    unknown = admin.post(f"/endpoints/{live['id']}/connections", {"connections": "nowhere"})
    assert unknown.status_code == 400 and "no acquirer connection named &#39;nowhere&#39;" in unknown.text
    name = _name()
    admin.post("/acquirers", {"name": name, **_fields()})
    assert admin.post(f"/endpoints/{live['id']}/connections", {"connections": name}).status_code == 303
    assert _route(shared_gateway, live["id"]) == [name]
    assert "needs at least one enabled ISO 8583" not in admin.get(f"/merchants/{merchant.login}").text
    [(before, after)] = run_sql(
        shared_gateway.database_url,
        f"SELECT before, after FROM audit_log WHERE target = 'endpoint {live['id']}'"
        " AND action = 'endpoint.connections'",
    )
    assert (json.loads(before), json.loads(after)) == ({"route": [first]}, {"route": [name]})


def test_an_endpoints_conditions_and_cascade_list_are_typed_one_connection_a_line_and_shown_as_written(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin, name = console_as("admin"), _name()
    admin.post("/acquirers", {"name": name, **_fields()})
    typed = f"{name}[brand=visa; bin=400000-499999; amount=100-]\r\nsandbox\r\n"
    path = f"/endpoints/{merchant.endpoint_id}/connections"
    assert admin.post(path, {"connections": typed, "cascade": "911, 116"}).status_code == 303
    shown = shared_gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id))
    assert (shown["route"], shown["cascade"]) == (
        [f"{name}[brand=VISA; bin=400000-499999; amount=100-]", "sandbox"],
        "911,116",
    )
    page = admin.get(f"/merchants/{merchant.login}").text
    assert f'{name}</a> <span class="muted">[brand=VISA; bin=400000-499999; amount=100-]</span>' in page
    assert 'value="911,116"' in page
    refused = admin.post(path, {"connections": f"{name}[currency=EURO]", "cascade": "911"})
    assert refused.status_code == 400 and f"{name}: currency &#39;EURO&#39; is not an ISO 4217 code" in refused.text
    assert f"{name}[currency=EURO]</textarea>" in refused.text
    assert shared_gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id))["cascade"] == "911,116"


def test_an_admin_creates_a_live_endpoint_with_its_connections_and_is_refused_one_without(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    admin, name = console_as("admin"), _name()
    fields = {"currency": "EUR", "mode": "live", "descriptor": "Shop live", "replay_window": "0"}
    for typed, why in (
        ("", "a live endpoint needs at least one enabled ISO 8583 connection"),
        ("sandbox", "connection sandbox is a sandbox: it serves sandbox endpoints only"),
        ("nowhere", "no acquirer connection named &#39;nowhere&#39;"),
    ):
        refused = admin.post(f"/merchants/{merchant.login}/endpoints", {**fields, "connections": typed})
        assert refused.status_code == 400 and why in refused.text, typed
        assert 'value="Shop live"' in refused.text  # the form keeps what was typed, to correct
    assert [e["id"] for e in shared_gateway.cli("endpoint", "list") if e["merchant"] == merchant.login] == [
        merchant.endpoint_id
    ]
    admin.post("/acquirers", {"name": name, **_fields()})
    created = admin.post(f"/merchants/{merchant.login}/endpoints", {**fields, "connections": name})
    assert created.status_code == 303
    listed = shared_gateway.cli("endpoint", "list")
    [live] = [e for e in listed if e["merchant"] == merchant.login and e["mode"] == "live"]
    assert _route(shared_gateway, live["id"]) == [name]
    [(after,)] = run_sql(
        shared_gateway.database_url,
        f"SELECT after FROM audit_log WHERE target = 'merchant {merchant.login}' AND action = 'endpoint.create'",
    )
    assert f'"connections":["{name}"]' in after


def test_a_viewer_reads_connections_and_is_refused_every_change(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    viewer, name = console_as("viewer"), _name()
    for path in ("/acquirers", "/acquirers/sandbox"):
        answer = viewer.get(path)
        assert answer.status_code == 200 and '<form method="post" action="/acquirers' not in answer.text, path
    posts = [
        ("/acquirers", {"name": name, **_fields()}),
        ("/acquirers/sandbox/disable", {}),
        ("/acquirers/sandbox", _fields()),
        (f"/endpoints/{merchant.endpoint_id}/connections", {"connections": "sandbox"}),
    ]
    for path, fields in posts:
        assert viewer.post(path, fields).status_code == 403, path
    assert name not in str(shared_gateway.cli("acquirer", "list"))
    assert _shown(shared_gateway, "sandbox")["enabled"] is True


def test_an_unknown_connection_has_no_page(console_as: Callable[[str], ConsoleClient]) -> None:
    admin = console_as("admin")
    assert admin.get("/acquirers/nowhere").status_code == 404
    assert admin.post("/acquirers/nowhere/disable", {}).status_code == 404


def _signed_on_by_one_process(merchant: Merchant, host: AcquirerHost, client_orderid: str) -> str:
    """A connection of the merchant's endpoint to ``host``, opened by a sale and reported; its name."""
    name = iso_connection(merchant, host)
    assert merchant.wait_final(merchant.sale(client_orderid).json()["paynet-order-id"])["status"] == "approved"
    link_until(merchant.gateway, name, lambda link: link["signed_on"] == 1)
    return name


def test_a_connections_pages_show_its_link_as_the_processes_that_opened_it_report_it(
    console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    viewer = console_as("viewer")
    with host_on_a_thread() as host:
        name = _signed_on_by_one_process(merchant, host, "console-link-1")
        page = viewer.get(f"/acquirers/{name}").text
        assert "signed on, 1 process reporting" in page and "<dd>1 of 1</dd>" in page
        assert "<dt>Reversals pending</dt><dd>0</dd>" in page and "<dt>Advices pending</dt><dd>0</dd>" in page
        listed = viewer.get("/acquirers").text
        assert f"{name}</a>" in listed and "signed on (1 of 1 sockets)" in listed
    never = _name()
    merchant.gateway.cli("acquirer", "create", "--name", never, "--host", "acquirer.example", "--port", "5000",
                         "--acquiring-institution-id", "1", "--terminal-id", "T1", "--card-acceptor-id", "S1",
                         "--mcc", "5999")  # fmt: skip
    assert "no process has opened it" in viewer.get(f"/acquirers/{never}").text


def test_a_process_that_died_is_no_longer_counted_once_its_report_is_stale(
    gateway_factory: Callable[..., Gateway],
) -> None:
    serving = gateway_factory()
    merchant = new_merchant(serving, "console-link-dead")
    with host_on_a_thread() as host:
        name = _signed_on_by_one_process(merchant, host, "console-link-2")
        serving.kill()  # no sign-off, no report taken away
    console = gateway_factory(KASSA_TEST_CLOCK="1")  # a console of another process, on a clock the test moves
    viewer = ConsoleClient(console)
    assert viewer.sign_in(new_operator(console, "viewer")).status_code == 303
    assert "signed on, 1 process reporting" in viewer.get(f"/acquirers/{name}").text
    console.advance(STALE_MS / 1000)
    page = viewer.get(f"/acquirers/{name}").text
    assert "no process has opened it" in page and "process reporting" not in page
