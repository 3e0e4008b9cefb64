"""``kassa operator create|list|disable|unlock|reset-password``: what an operator of the gateway types, and what
the audit log keeps of it."""

from __future__ import annotations

import getpass
import uuid

import pytest

from tests.support.commands import run_kassa
from tests.support.console import ConsoleClient, Login, hash_cost_of
from tests.support.gateway import TEST_PASSWORD_COST, Gateway


def test_an_admin_is_created_with_a_password_and_a_one_time_code_secret_shown_once(shared_gateway: Gateway) -> None:
    created = shared_gateway.cli("operator", "create", "--email", "Chief@Ops.Example", "--role", "admin")
    assert created["email"] == "chief@ops.example" and created["role"] == "admin" and created["totp"] is True
    assert len(created["password"]) >= 20 and created["totp_secret"]
    assert created["totp_uri"].startswith("otpauth://totp/")
    listed = next(o for o in shared_gateway.cli("operator", "list") if o["email"] == "chief@ops.example")
    assert "password" not in listed and "totp_secret" not in listed
    login = Login(created["email"], created["password"], created["totp_secret"])
    assert ConsoleClient(shared_gateway).sign_in(login).status_code == 303


def test_a_viewer_has_no_one_time_codes_unless_asked(shared_gateway: Gateway) -> None:
    plain = shared_gateway.cli("operator", "create", "--email", "eyes@ops.example", "--role", "viewer")
    asked = shared_gateway.cli("operator", "create", "--email", "eyes2@ops.example", "--role", "viewer", "--totp")
    assert plain["totp_secret"] is None and asked["totp_secret"]


def test_created_and_reset_passwords_are_hashed_at_the_cost_set(shared_gateway: Gateway) -> None:
    email = f"cost-{uuid.uuid4().hex[:8]}@ops.example"
    costlier = {**shared_gateway.env, "KASSA_PASSWORD_COST": "m=19456,t=2,p=1"}
    assert run_kassa(["operator", "create", "--email", email, "--role", "viewer"], costlier).returncode == 0
    assert hash_cost_of(shared_gateway, email) == "m=19456,t=2,p=1"
    shared_gateway.cli("operator", "reset-password", "--email", email)
    assert hash_cost_of(shared_gateway, email) == TEST_PASSWORD_COST


def test_a_second_operator_with_one_email_or_a_bad_email_is_refused(shared_gateway: Gateway) -> None:
    shared_gateway.cli("operator", "create", "--email", "twice@ops.example", "--role", "support")
    with pytest.raises(RuntimeError, match="exists already"):
        shared_gateway.cli("operator", "create", "--email", "TWICE@ops.example", "--role", "support")
    with pytest.raises(RuntimeError, match="email address"):
        shared_gateway.cli("operator", "create", "--email", "not-an-email", "--role", "support")


def test_disable_and_reset_password_are_audited_as_the_cli_user(shared_gateway: Gateway) -> None:
    created = shared_gateway.cli("operator", "create", "--email", "leaver@ops.example", "--role", "support")
    assert shared_gateway.cli("operator", "disable", "--email", "leaver@ops.example")["disabled"] is True
    reset = shared_gateway.cli("operator", "reset-password", "--email", "leaver@ops.example")
    assert reset["disabled"] is False and reset["password"] != created["password"]
    with pytest.raises(RuntimeError, match="no operator"):
        shared_gateway.cli("operator", "disable", "--email", "nobody@ops.example")
    admin = ConsoleClient(shared_gateway)
    made = shared_gateway.cli("operator", "create", "--email", "auditor@ops.example", "--role", "admin")
    assert admin.sign_in(Login(made["email"], made["password"], made["totp_secret"])).status_code == 303
    audit = admin.get("/audit", actor=f"cli:{getpass.getuser()}").text
    for action in ("operator.create", "operator.disable", "operator.reset-password"):
        assert action in audit


def test_unlock_lets_a_locked_out_operator_in_with_the_same_password_and_is_audited(shared_gateway: Gateway) -> None:
    made = shared_gateway.cli("operator", "create", "--email", "fumbler@ops.example", "--role", "viewer")
    login = Login(made["email"], made["password"], None)
    client = ConsoleClient(shared_gateway)
    for _ in range(5):
        client.sign_in(login, password="wrong password!")
    assert client.sign_in(login).status_code == 401
    listed = {o["email"]: o for o in shared_gateway.cli("operator", "list")}
    assert listed["fumbler@ops.example"]["locked_until"] is not None
    unlocked = shared_gateway.cli("operator", "unlock", "--email", "fumbler@ops.example")
    assert unlocked["locked_until"] is None and unlocked["failed_signins"] == 0
    assert client.sign_in(login).status_code == 303  # with the password it had
    admin = ConsoleClient(shared_gateway)
    auditor = shared_gateway.cli("operator", "create", "--email", "unlock-auditor@ops.example", "--role", "admin")
    assert admin.sign_in(Login(auditor["email"], auditor["password"], auditor["totp_secret"])).status_code == 303
    audit = admin.get("/audit", actor=f"cli:{getpass.getuser()}").text
    assert "operator.unlock" in audit and "fumbler@ops.example" in audit
    with pytest.raises(RuntimeError, match="no operator"):
        shared_gateway.cli("operator", "unlock", "--email", "nobody@ops.example")
