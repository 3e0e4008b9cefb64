"""``kassa acquirer`` and ``kassa endpoint connections``, run as operators run them against a gateway's
database: connections are created, changed, shown and disabled, a secret goes in from a file or standard
input and never comes out, every change is in the audit log, and an endpoint's route keeps the rules.
``show`` tells an ISO 8583 connection's link as the gateway processes that opened it report it (signed on,
down with its last error, gone with the process that stopped) and its reversals and advices pending."""

from __future__ import annotations

import getpass
import json
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.acquirer_host import host_on_a_thread, iso_connection, link_until
from tests.support.commands import run_kassa
from tests.support.databases import run_sql
from tests.support.gateway import Gateway, Merchant, cli_run, new_merchant
from tests.support.operations import capture, preauth

SETTINGS = ("--host", "acquirer.example", "--port", "5000", "--acquiring-institution-id", "123456",
            "--terminal-id", "TERM0001", "--card-acceptor-id", "SHOP00000000001", "--mcc", "5999")  # fmt: skip
SECRET = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIHsecretsecretsecret\n-----END PRIVATE KEY-----"


def _name() -> str:
    return f"acq-{uuid.uuid4().hex[:10]}"


def _with_stdin(gateway: Gateway, stdin: str, *args: str) -> dict[str, Any]:
    done = run_kassa([*args, "--json"], gateway.env, stdin)
    assert done.returncode == 0, done.stderr
    found: dict[str, Any] = json.loads(done.stdout)
    return found


def _refusal(gateway: Gateway, *args: str) -> str:
    """A command that must fail: its message is one readable line, not a traceback."""
    done = cli_run(gateway, *args)
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


def _audit(gateway: Gateway, target: str) -> list[tuple[Any, ...]]:
    return run_sql(
        gateway.database_url,
        f"SELECT actor, action, before, after FROM audit_log WHERE target = '{target}' ORDER BY id",
    )


def test_a_created_connection_is_listed_and_shown_with_its_settings_and_defaults(shared_gateway: Gateway) -> None:
    name = _name()
    created = shared_gateway.cli("acquirer", "create", "--name", name, *SETTINGS, "--tls")
    assert created == {
        "id": created["id"], "name": name, "kind": "iso8583", "enabled": True, "secret": False,
        "host": "acquirer.example", "port": 5000, "tls": True, "acquiring_institution_id": "123456",
        "terminal_id": "TERM0001", "card_acceptor_id": "SHOP00000000001", "mcc": "5999",
        "response_timeout_ms": 20000, "sockets": 1, "dialect": "reference",
    }  # fmt: skip
    listed = {c["name"]: c for c in shared_gateway.cli("acquirer", "list")}
    assert listed[name] == created
    assert listed["sandbox"]["kind"] == "sandbox" and "host" not in listed["sandbox"]
    shown = shared_gateway.cli("acquirer", "show", "--name", name)
    link = shown.pop("link")
    assert shown == {**created, "endpoints": [], "problems": {}}
    assert (link["state"], link["processes"], link["by_process"]) == ("no process has opened it", 0, [])
    human = cli_run(shared_gateway, "acquirer", "show", "--name", name).stdout
    assert "terminal id (field 41): 'TERM0001'" in human and "secret: none" in human
    assert "link: no process has opened it" in human and "reversals pending: 0, advices pending: 0" in human
    assert shared_gateway.cli("acquirer", "show", "--name", "sandbox")["link"] is None


def test_the_secret_is_read_from_standard_input_or_a_file_and_never_shown(
    shared_gateway: Gateway, tmp_path: Path
) -> None:
    name = _name()
    created = _with_stdin(shared_gateway, SECRET, "acquirer", "create", "--name", name, *SETTINGS, "--secret-file", "-")
    assert created["secret"] is True
    key_file = tmp_path / "mac.key"
    key_file.write_text("0123456789ABCDEF0123456789ABCDEF\n")
    assert shared_gateway.cli("acquirer", "update", "--name", name, "--secret-file", str(key_file))["secret"] is True
    for args in (("show", "--name", name), ("list",)):
        for output in (
            cli_run(shared_gateway, "acquirer", *args).stdout,
            json.dumps(shared_gateway.cli("acquirer", *args)),
        ):
            assert "secret" in output and "PRIVATE KEY" not in output and "0123456789ABCDEF" not in output
    stored = run_sql(
        shared_gateway.database_url, f"SELECT secret_sealed FROM acquirer_connections WHERE name = '{name}'"
    )
    assert b"0123456789ABCDEF" not in bytes(stored[0][0])
    audited = json.dumps(_audit(shared_gateway, f"acquirer {name}"))
    assert "PRIVATE KEY" not in audited and "0123456789ABCDEF" not in audited
    assert shared_gateway.cli("acquirer", "update", "--name", name, "--clear-secret")["secret"] is False


def test_there_is_no_option_to_give_a_secret_on_the_command_line(shared_gateway: Gateway) -> None:
    refused = _refusal(shared_gateway, "acquirer", "create", "--name", _name(), *SETTINGS, "--secret", SECRET)
    assert "No such option '--secret'" in refused and "PRIVATE" not in refused


def test_an_update_changes_the_settings_it_names_and_is_audited_as_the_cli_user(shared_gateway: Gateway) -> None:
    name = _name()
    shared_gateway.cli("acquirer", "create", "--name", name, *SETTINGS)
    updated = shared_gateway.cli(
        "acquirer", "update", "--name", name, "--sockets", "4", "--response-timeout", "2.5", "--terminal-id", "T2"
    )
    assert (updated["sockets"], updated["response_timeout_ms"], updated["terminal_id"]) == (4, 2500, "T2      ")
    assert (updated["host"], updated["mcc"]) == ("acquirer.example", "5999")
    (_, create, _, _), (actor, action, before, after) = _audit(shared_gateway, f"acquirer {name}")
    assert (create, actor, action) == ("acquirer.create", f"cli:{getpass.getuser()}", "acquirer.update")
    assert json.loads(before) == {"sockets": 1, "response_timeout_ms": 20000, "terminal_id": "TERM0001"}
    assert json.loads(after) == {"sockets": 4, "response_timeout_ms": 2500, "terminal_id": "T2      "}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--port", "0"), "Invalid value for --port: port must be a whole number from 1 to 65535"),
        (("--host", "bad host"), "Invalid value for --host: host must be a host name or an IP address"),
        (("--terminal-id", "TERMINAL9"), "terminal id (field 41) must be 1 to 8 printable ASCII characters"),
        (("--acquiring-institution-id", "12x"), "acquiring institution id (field 32) must be 1 to 11 digits"),
        (("--mcc", "59999"), "merchant category code (field 18) must be 4 digits"),
        (("--sockets", "50"), "sockets per process must be a whole number from 1 to 8"),
        (("--response-timeout", "0"), "response timeout must be a number of seconds above 0"),
        (("--dialect", "acme"), "Invalid value for --dialect: no dialect named 'acme'"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_option(
    shared_gateway: Gateway, args: tuple[str, ...], message: str
) -> None:
    name = _name()
    assert message in _refusal(shared_gateway, "acquirer", "create", "--name", name, *SETTINGS, *args)
    assert name not in json.dumps(shared_gateway.cli("acquirer", "list"))


def test_a_taken_name_a_bad_name_and_settings_for_the_sandbox_are_refused(shared_gateway: Gateway) -> None:
    name = _name()
    shared_gateway.cli("acquirer", "create", "--name", name, *SETTINGS)
    assert f"an acquirer connection named {name} exists already" in _refusal(
        shared_gateway, "acquirer", "create", "--name", name, *SETTINGS
    )
    assert "name must be 1 to 64 lower-case letters" in _refusal(
        shared_gateway, "acquirer", "create", "--name", "Acme Bank", *SETTINGS
    )
    assert "a sandbox connection takes no settings" in _refusal(
        shared_gateway, "acquirer", "create", "--name", _name(), "--kind", "sandbox", "--host", "a.example"
    )
    assert "sandbox is a sandbox connection: it has no settings" in _refusal(
        shared_gateway, "acquirer", "update", "--name", "sandbox", "--port", "1"
    )
    assert "no acquirer connection named 'nowhere'" in _refusal(shared_gateway, "acquirer", "show", "--name", "nowhere")


def test_an_endpoint_shows_and_sets_its_connections_in_order(shared_gateway: Gateway, merchant: Merchant) -> None:
    bank = _name()
    shared_gateway.cli("acquirer", "create", "--name", bank, *SETTINGS)
    endpoint = str(merchant.endpoint_id)
    assert shared_gateway.cli("endpoint", "connections", "--id", endpoint) == {
        "endpoint": merchant.endpoint_id, "connections": ["sandbox"], "route": ["sandbox"], "cascade": "default",
        "problem": None,
    }  # fmt: skip
    set_to = shared_gateway.cli("endpoint", "connections", "--id", endpoint, bank, "sandbox")
    assert set_to["connections"] == [bank, "sandbox"]
    assert shared_gateway.cli("endpoint", "connections", "--id", endpoint)["connections"] == [bank, "sandbox"]
    assert shared_gateway.cli("acquirer", "show", "--name", bank)["endpoints"] == [merchant.endpoint_id]
    [(actor, action, before, after)] = _audit(shared_gateway, f"endpoint {endpoint}")
    assert (actor, action) == (f"cli:{getpass.getuser()}", "endpoint.connections")
    assert (json.loads(before), json.loads(after)) == ({"route": ["sandbox"]}, {"route": [bank, "sandbox"]})


def test_an_endpoints_route_is_written_with_its_conditions_and_cascade_list_and_read_back_as_written(
    shared_gateway: Gateway, merchant: Merchant
) -> None:
    endpoint = str(merchant.endpoint_id)
    shared_gateway.cli(
        "endpoint", "connections", "--id", endpoint, "--cascade", "116,907", "sandbox[currency=usd; amount=100-]"
    )
    shown = shared_gateway.cli("endpoint", "connections", "--id", endpoint)
    assert (shown["route"], shown["cascade"]) == (["sandbox[currency=USD; amount=100-]"], "116,907")
    text = cli_run(shared_gateway, "endpoint", "connections", "--id", endpoint).stdout
    assert "1. sandbox[currency=USD; amount=100-]" in text and "cascade on: 116,907" in text
    [(_, _, before, after)] = _audit(shared_gateway, f"endpoint {endpoint}")
    assert json.loads(before) == {"route": ["sandbox"], "cascade": "default"}
    assert json.loads(after) == {"route": ["sandbox[currency=USD; amount=100-]"], "cascade": "116,907"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("sandbox[bin=4x]",), "sandbox: BIN range '4x' must be a prefix of 1 to 11 digits"),
        (("sandbox[kind=refund]",), "sandbox: kind 'refund' is none of payment, payout"),
        (("--cascade", "05"), "cascade code '05' is none of the action codes"),
    ],
)
def test_a_route_or_cascade_list_that_cannot_be_read_is_refused_naming_it_and_changes_nothing(
    shared_gateway: Gateway, merchant: Merchant, args: tuple[str, ...], message: str
) -> None:
    endpoint = str(merchant.endpoint_id)
    refused = cli_run(shared_gateway, "endpoint", "connections", "--id", endpoint, *args)
    assert refused.returncode == 2 and message in refused.stderr
    assert ("value for --cascade" in refused.stderr) is (args[0] == "--cascade")
    shown = shared_gateway.cli("endpoint", "connections", "--id", endpoint)
    assert (shown["route"], shown["cascade"]) == (["sandbox"], "default")


def test_a_live_endpoint_is_created_with_its_iso_8583_connections_and_refused_without_one(
    shared_gateway: Gateway, merchant: Merchant
) -> None:
    create = ("endpoint", "create", "--merchant", merchant.login, "--currency", "EUR", "--mode", "live")

    def endpoints() -> list[int]:
        return [e["id"] for e in shared_gateway.cli("endpoint", "list") if e["merchant"] == merchant.login]

    before = endpoints()
    assert "a live endpoint needs its acquirer connections: give --connection NAME" in _refusal(shared_gateway, *create)
    refused = _refusal(shared_gateway, *create, "--connection", "sandbox")
    assert "for --connection: connection sandbox is a sandbox: it serves sandbox endpoints only" in refused
    assert "no acquirer connection named 'nowhere'" in _refusal(shared_gateway, *create, "--connection", "nowhere")
    bank, spare = _name(), _name()
    for name in (bank, spare):
        shared_gateway.cli("acquirer", "create", "--name", name, *SETTINGS)
    shared_gateway.cli("acquirer", "disable", "--name", spare)
    assert "a live endpoint needs at least one enabled ISO 8583 connection" in _refusal(
        shared_gateway, *create, "--connection", spare
    )
    assert endpoints() == before  # nothing refused was made

    created = shared_gateway.cli(*create, "--connection", spare, "--connection", bank)
    assert (created["mode"], created["connections"]) == ("live", [spare, bank])
    shown = shared_gateway.cli("endpoint", "connections", "--id", str(created["id"]))
    assert (shown["connections"], shown["problem"]) == ([spare, bank], None)


def test_a_new_sandbox_endpoint_uses_the_sandbox_unless_given_its_connections(
    shared_gateway: Gateway, merchant: Merchant
) -> None:
    create = ("endpoint", "create", "--merchant", merchant.login, "--currency", "EUR")
    assert shared_gateway.cli(*create)["connections"] == ["sandbox"]
    bank = _name()
    shared_gateway.cli("acquirer", "create", "--name", bank, *SETTINGS)
    assert shared_gateway.cli(*create, "--connection", bank, "--connection", "sandbox")["connections"] == [
        bank,
        "sandbox",
    ]


def test_a_live_endpoint_takes_iso_8583_connections_only_and_disabling_its_last_is_warned_of(
    shared_gateway: Gateway, merchant: Merchant
) -> None:
    bank = _name()
    shared_gateway.cli("acquirer", "create", "--name", bank, *SETTINGS)
    created = shared_gateway.cli("endpoint", "create", "--merchant", merchant.login, "--currency", "EUR",
                                 "--mode", "live", "--connection", bank)  # fmt: skip
    endpoint = str(created["id"])
    assert "connection sandbox is a sandbox: it serves sandbox endpoints only" in _refusal(
        shared_gateway, "endpoint", "connections", "--id", endpoint, "sandbox"
    )
    assert f"connection {bank} is listed twice" in _refusal(
        shared_gateway, "endpoint", "connections", "--id", endpoint, bank, bank
    )

    disabled = cli_run(shared_gateway, "acquirer", "disable", "--name", bank)
    assert disabled.returncode == 0, disabled.stderr
    assert f"warning: endpoint {endpoint}: a live endpoint needs at least one enabled ISO 8583 connection" in (
        disabled.stdout
    )
    assert shared_gateway.cli("acquirer", "show", "--name", bank)["enabled"] is False
    assert shared_gateway.cli("endpoint", "connections", "--id", endpoint)["connections"] == [bank]
    assert shared_gateway.cli("acquirer", "enable", "--name", bank)["problems"] == {}
    actions = [action for _, action, _, _ in _audit(shared_gateway, f"acquirer {bank}")]
    assert actions == ["acquirer.create", "acquirer.disable", "acquirer.enable"]


def test_an_unknown_endpoint_a_group_and_an_unknown_connection_are_refused_readably(
    shared_gateway: Gateway, merchant: Merchant
) -> None:
    assert "no endpoint or group 987654321" in _refusal(shared_gateway, "endpoint", "connections", "--id", "987654321")
    group = shared_gateway.cli(
        "group", "create", "--merchant", merchant.login, "--endpoints", str(merchant.endpoint_id)
    )
    assert "is a group: its member endpoints have connections" in _refusal(
        shared_gateway, "endpoint", "connections", "--id", str(group["id"]), "sandbox"
    )
    assert "no acquirer connection named 'nowhere'" in _refusal(
        shared_gateway, "endpoint", "connections", "--id", str(merchant.endpoint_id), "nowhere"
    )


def test_after_a_sale_the_link_shows_signed_on_by_the_process_that_opened_it(merchant: Merchant) -> None:
    with host_on_a_thread() as host:
        name = iso_connection(merchant, host)
        assert merchant.wait_final(merchant.sale("link-1").json()["paynet-order-id"])["status"] == "approved"
        link = link_until(merchant.gateway, name, lambda link: link["processes"] == 1)
        assert (link["state"], link["sockets"], link["signed_on"], link["in_flight"]) == ("signed on", 1, 1, 0)
        assert (link["reversals_pending"], link["advices_pending"], link["last_error"]) == (0, 0, None)
        [view] = link["by_process"]
        assert view["reported_seconds_ago"] <= 15 and view["process"].count(":") == 2
        human = cli_run(merchant.gateway, "acquirer", "show", "--name", name).stdout
        assert "link: signed on, 1 process reporting" in human and "sockets signed on: 1 of 1" in human


def test_with_its_host_gone_the_link_shows_down_with_its_last_error(merchant: Merchant) -> None:
    with host_on_a_thread() as host:
        name = iso_connection(merchant, host)
        assert merchant.wait_final(merchant.sale("link-2").json()["paynet-order-id"])["status"] == "approved"
        link_until(merchant.gateway, name, lambda link: link["signed_on"] == 1)
    link = link_until(merchant.gateway, name, lambda link: link["state"] == "down")
    assert (link["processes"], link["sockets"], link["signed_on"]) == (1, 1, 0)
    error = link["last_error"]
    assert error["text"].startswith("socket 0: ") and error["age_seconds"] <= 20
    human = cli_run(merchant.gateway, "acquirer", "show", "--name", name).stdout
    assert "link: down, 1 process reporting" in human and "last error: socket 0: " in human  # closed, or refused


def test_unanswered_reversals_and_advices_are_shown_pending(gateway_factory: Callable[..., Gateway]) -> None:
    merchant = new_merchant(gateway_factory(), "link-pending")
    with host_on_a_thread() as host:
        name = iso_connection(merchant, host)
        order = preauth(merchant, "link-p1", amount="20.00").json()["paynet-order-id"]
        assert merchant.wait_final(order)["status"] == "approved"
        # The process reports its link within a tick of opening it; under load the pending messages below
        # could be counted before that first report, when the link still reads "no process has opened it".
        link_until(merchant.gateway, name, lambda link: link["state"] == "signed on")
        host.silent.add("4111111111111111")  # nothing of this card is answered from now on
        capture(merchant, "link-p1", order, "20.00")  # an advice, repeated until answered
        merchant.sale("link-p2")  # reversed, and its reversal is repeated until answered
        pending = link_until(merchant.gateway, name, lambda link: link["reversals_pending"] == 1)
        link = link_until(merchant.gateway, name, lambda link: link["advices_pending"] == 1)
        assert (pending["state"], link["state"], link["reversals_pending"]) == ("signed on", "signed on", 1)


def test_a_process_that_stops_is_no_longer_counted(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, "link-stop")
    with host_on_a_thread() as host:
        name = iso_connection(merchant, host)
        assert merchant.wait_final(merchant.sale("link-s1").json()["paynet-order-id"])["status"] == "approved"
        link_until(gateway, name, lambda link: link["processes"] == 1)
        gateway.stop()
        link = gateway.cli("acquirer", "show", "--name", name)["link"]
    assert (link["state"], link["processes"], link["signed_on"]) == ("no process has opened it", 0, 0)
