"""Acquirer connections: their settings as operators type them, and the rule of an endpoint's route."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from kassa.domain.acquirers import (
    Connection,
    Kind,
    LinkSettings,
    SettingProblem,
    changes,
    name_problem,
    read_link,
    route_problem,
    secret_problem,
    serving,
)
from kassa.domain.merchants import Mode
from tests.support.proxy import _self_signed

TYPED: dict[str, str | bool] = {
    "host": "acquirer.example",
    "port": "5000",
    "acquiring_institution_id": "123456",
    "terminal_id": "TERM0001",
    "card_acceptor_id": "SHOP00000000001",
    "mcc": "5999",
}
LINK = read_link(TYPED)
SANDBOX = Connection(1, "sandbox", Kind.SANDBOX, None)
BANK = Connection(2, "bank", Kind.ISO8583, LINK)
OTHER_BANK = Connection(3, "other-bank", Kind.ISO8583, LINK)


def test_settings_typed_as_text_get_the_contracts_defaults() -> None:
    expected = LinkSettings(
        "acquirer.example", 5000, False, "123456", "TERM0001", "SHOP00000000001", "5999", 20_000, 1, "reference"
    )
    assert read_link(TYPED) == expected


def test_a_timeout_is_read_in_seconds_to_the_millisecond() -> None:
    assert read_link({**TYPED, "response_timeout": "0.25"}).response_timeout_ms == 250
    assert read_link({**TYPED, "response_timeout": "300"}).response_timeout_seconds == 300


def test_ids_shorter_than_their_field_are_padded_with_spaces_as_the_field_is_sent() -> None:
    link = read_link({**TYPED, "terminal_id": "T1", "card_acceptor_id": "SHOP 1"})
    assert (link.terminal_id, link.card_acceptor_id) == ("T1      ", "SHOP 1         ")


def test_an_address_is_a_host_too() -> None:
    assert read_link({**TYPED, "host": "192.0.2.10"}).host == "192.0.2.10"
    assert read_link({**TYPED, "host": "2001:db8::1"}).host == "2001:db8::1"


def test_an_update_keeps_what_it_does_not_name_and_an_emptied_optional_setting_is_its_default() -> None:
    tuned = read_link({"sockets": "4", "tls": True, "response_timeout": "5"}, LINK)
    assert (tuned.sockets, tuned.tls, tuned.response_timeout_ms, tuned.host) == (4, True, 5_000, "acquirer.example")
    assert read_link({"sockets": "", "response_timeout": ""}, tuned) == replace(
        tuned, sockets=1, response_timeout_ms=20_000
    )
    assert read_link({}, tuned) == tuned


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("host", "", "host is required"),
        ("host", "bad host", "host must be a host name or an IP address"),
        ("host", "10.0.0.300", "host must be a host name or an IP address"),
        ("host", "-leading.example", "host must be a host name or an IP address"),
        ("host", "a" * 64 + ".example", "host must be a host name or an IP address"),
        ("port", "0", "port must be a whole number from 1 to 65535"),
        ("port", "65536", "port must be a whole number from 1 to 65535"),
        ("port", "http", "port must be a whole number from 1 to 65535"),
        ("acquiring_institution_id", "", "acquiring institution id (field 32) is required"),
        ("acquiring_institution_id", "123456789012", "acquiring institution id (field 32) must be 1 to 11 digits"),
        ("acquiring_institution_id", "12AB", "acquiring institution id (field 32) must be 1 to 11 digits"),
        ("terminal_id", "TERMINAL1", "terminal id (field 41) must be 1 to 8 printable ASCII characters"),
        ("terminal_id", "TÉRM", "terminal id (field 41) must be 1 to 8 printable ASCII characters"),
        ("terminal_id", "   ", "terminal id (field 41) must be 1 to 8 printable ASCII characters"),
        ("card_acceptor_id", "S" * 16, "card acceptor id (field 42) must be 1 to 15 printable ASCII characters"),
        ("mcc", "599", "merchant category code (field 18) must be 4 digits"),
        ("mcc", "59a9", "merchant category code (field 18) must be 4 digits"),
        ("response_timeout", "0", "response timeout must be a number of seconds above 0 and at most 300"),
        ("response_timeout", "-1", "response timeout must be a number of seconds above 0 and at most 300"),
        ("response_timeout", "301", "response timeout must be a number of seconds above 0 and at most 300"),
        ("response_timeout", "0.0005", "response timeout must be a number of seconds above 0 and at most 300"),
        ("response_timeout", "soon", "response timeout must be a number of seconds above 0 and at most 300"),
        ("response_timeout", "NaN", "response timeout must be a number of seconds above 0 and at most 300"),
        ("sockets", "0", "sockets per process must be a whole number from 1 to 8"),
        ("sockets", "9", "sockets per process must be a whole number from 1 to 8"),
        ("dialect", "Reference!", "dialect must be a name of 1 to 32 lower-case letters"),
    ],
)
def test_a_bad_setting_is_refused_naming_its_field(field: str, value: str, message: str) -> None:
    with pytest.raises(SettingProblem, match=message.replace("(", r"\(").replace(")", r"\)")) as refused:
        read_link({**TYPED, field: value})
    assert refused.value.field == field


def test_a_required_setting_missing_from_a_creation_is_named() -> None:
    with pytest.raises(SettingProblem, match="merchant category code") as refused:
        read_link({name: value for name, value in TYPED.items() if name != "mcc"})
    assert refused.value.field == "mcc"


def test_settings_made_in_code_are_held_to_the_same_rules() -> None:
    with pytest.raises(SettingProblem, match=r"terminal id \(field 41\) must be 8 printable ASCII characters"):
        replace(LINK, terminal_id="T1")
    with pytest.raises(SettingProblem, match="port"):
        replace(LINK, port=70000)


def test_a_sandbox_connection_has_no_settings_and_an_iso_8583_one_has_them() -> None:
    with pytest.raises(ValueError, match="has no settings"):
        Connection(1, "sandbox", Kind.SANDBOX, LINK)
    with pytest.raises(ValueError, match="needs its link settings"):
        Connection(2, "bank", Kind.ISO8583, None)


@pytest.mark.parametrize("name", ["sandbox", "bank-1", "acme.eu_2", "a"])
def test_names_of_lower_case_letters_digits_and_punctuation_are_taken(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize("name", ["", "Bank", "-bank", "bank one", "b" * 65, "bank/1"])
def test_other_names_are_refused(name: str) -> None:
    assert name_problem(name) is not None


def test_a_secret_must_be_something_and_not_huge() -> None:
    assert secret_problem("-----BEGIN PRIVATE KEY-----\n...") is None
    assert secret_problem(" \n") == "the secret is empty"
    assert secret_problem("k" * 16385) == "the secret is longer than 16 KiB"


def test_a_change_is_recorded_as_what_differs_and_a_new_secret_as_new_never_its_value() -> None:
    tuned = replace(BANK, link=replace(LINK, sockets=2), has_secret=True)
    assert changes(BANK, tuned) == ({"sockets": 1, "secret": False}, {"sockets": 2, "secret": True})
    assert changes(tuned, tuned, new_secret=True) == ({"secret": True}, {"secret": "new"})
    assert changes(tuned, tuned) == ({}, {})


# --- routes ------------------------------------------------------------------------------------------------


def test_a_sandbox_endpoint_may_use_the_sandbox_and_an_acquirers_test_host() -> None:
    assert route_problem(Mode.SANDBOX, [SANDBOX]) is None
    assert route_problem(Mode.SANDBOX, [BANK, SANDBOX]) is None


def test_a_live_endpoint_needs_an_iso_8583_connection_and_never_the_sandbox() -> None:
    assert route_problem(Mode.LIVE, [BANK, OTHER_BANK]) is None
    assert route_problem(Mode.LIVE, []) == "a live endpoint needs at least one enabled ISO 8583 connection"
    assert route_problem(Mode.LIVE, [BANK, SANDBOX]) == (
        "connection sandbox is a sandbox: it serves sandbox endpoints only"
    )


def test_no_connection_is_listed_twice() -> None:
    assert route_problem(Mode.LIVE, [BANK, OTHER_BANK, BANK]) == "connection bank is listed twice"


def test_a_disabled_connection_may_stay_listed_but_serves_nothing() -> None:
    off = replace(BANK, enabled=False)
    assert serving(Mode.LIVE, [off, OTHER_BANK]) == (OTHER_BANK,)
    assert route_problem(Mode.LIVE, [off, OTHER_BANK]) is None
    assert route_problem(Mode.LIVE, [off]) == "a live endpoint needs at least one enabled ISO 8583 connection"
    assert route_problem(Mode.LIVE, [off, SANDBOX]) is not None


def test_an_endpoint_needs_a_connection_it_can_route_to() -> None:
    assert route_problem(Mode.SANDBOX, []) == "an endpoint needs at least one enabled connection"
    assert route_problem(Mode.SANDBOX, [replace(SANDBOX, enabled=False)]) == (
        "an endpoint needs at least one enabled connection"
    )


def test_a_live_endpoint_is_served_by_its_iso_8583_connections_alone() -> None:
    # A route the rule refuses may still be stored from before (a connection switched to live): payments of
    # a live endpoint never reach the sandbox.
    assert serving(Mode.LIVE, [SANDBOX, BANK]) == (BANK,)
    assert serving(Mode.SANDBOX, [SANDBOX, BANK]) == (SANDBOX, BANK)


def test_a_secret_holding_a_certificate_must_hold_its_private_key_too(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    certificate, key = _self_signed(tmp_path / "a")
    _, other_key = _self_signed(tmp_path / "b")
    assert secret_problem(certificate.read_text() + key.read_text()) is None
    assert secret_problem(key.read_text() + certificate.read_text()) is None
    assert "must come with its private key" in (secret_problem(certificate.read_text()) or "")
    assert secret_problem(certificate.read_text() + other_key.read_text()) == (
        "the secret's private key is not the key of its (first) certificate"
    )
    assert secret_problem("a MAC key, not a certificate") is None
