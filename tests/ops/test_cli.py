"""The operator command line (CONTRACT §14), run as operators run it against a live gateway's database:
what it creates is what the API then serves, and what it shows of orders is masked."""

from __future__ import annotations

import importlib
import pkgutil
import random
import subprocess
import sys
import uuid
from pathlib import Path

import httpx
import pytest

import kassa.ops.cli as cli
from tests.support.commands import run_kassa
from tests.support.gateway import Gateway, Merchant, cli_run, new_merchant, unreachable_connection

CARD = "4111111111111111"


def _login() -> str:
    return f"m-{uuid.uuid4().hex[:10]}"


def _order() -> str:
    return f"o-{uuid.uuid4().hex[:10]}"


def refused(response: httpx.Response, code: int) -> None:
    assert response.status_code == 400, response.text
    assert response.json()["type"] == "validation-error"
    assert response.json()["error-code"] == str(code), response.text


def readable_failure(gateway: Gateway, *args: str) -> str:
    """Runs a command that must fail; its message is a sentence on stderr, not a traceback."""
    done = cli_run(gateway, *args)
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip()
    return done.stderr


@pytest.fixture(scope="module")
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, _login())


@pytest.fixture(scope="module")
def stranger(shared_gateway: Gateway) -> Merchant:
    """Another merchant, with an endpoint and no orders."""
    return new_merchant(shared_gateway, _login())


@pytest.fixture(scope="module")
def sales(shop: Merchant) -> dict[str, str]:
    """An approved and a declined sale of ``shop``: paynet order ids by outcome."""
    ids = {}
    for outcome, cvv2 in (("approved", "123"), ("declined", "116")):
        answer = shop.sale(_order(), cvv2=cvv2)
        assert answer.status_code == 200, answer.text
        ids[outcome] = answer.json()["paynet-order-id"]
        assert shop.wait_final(ids[outcome])["status"] == outcome
    return ids


# --- merchants ---------------------------------------------------------------------------------------------


def test_merchant_create_prints_login_and_a_random_control_key(shared_gateway: Gateway) -> None:
    login = _login()
    created = shared_gateway.cli("merchant", "create", "--login", login)
    assert created["login"] == login
    assert isinstance(created["id"], int)
    assert len(created["control_key"]) >= 32
    assert created["classic"] is False
    other = shared_gateway.cli("merchant", "create", "--login", _login())
    assert other["control_key"] != created["control_key"]


def test_merchant_created_with_a_control_key_signs_with_it(shared_gateway: Gateway) -> None:
    login, key = _login(), f"key-{uuid.uuid4().hex}"
    created = shared_gateway.cli("merchant", "create", "--login", login, "--control-key", key)
    assert created["control_key"] == key
    endpoint = shared_gateway.cli("endpoint", "create", "--merchant", login, "--currency", "USD")
    merchant = Merchant(shared_gateway, login, key, endpoint["id"])
    answer = merchant.sale(_order())
    assert answer.status_code == 200, answer.text


def test_merchant_create_refuses_a_control_key_shorter_than_16_characters(shared_gateway: Gateway) -> None:
    login = _login()
    message = readable_failure(shared_gateway, "merchant", "create", "--login", login, "--control-key", "k" * 15)
    assert "16" in message
    assert login not in {m["login"] for m in shared_gateway.cli("merchant", "list")}
    created = shared_gateway.cli("merchant", "create", "--login", login, "--control-key", "k" * 16)
    assert created["control_key"] == "k" * 16


def test_merchant_create_classic_is_listed_as_classic(shared_gateway: Gateway) -> None:
    login = _login()
    assert shared_gateway.cli("merchant", "create", "--login", login, "--classic")["classic"] is True
    listed = {m["login"]: m for m in shared_gateway.cli("merchant", "list")}
    assert listed[login]["classic"] is True


def test_merchant_list_shows_every_merchant(shared_gateway: Gateway, shop: Merchant) -> None:
    listed = {m["login"]: m for m in shared_gateway.cli("merchant", "list")}
    assert listed[shop.login]["control_key"] == shop.control_key
    assert listed[shop.login]["classic"] is False

    human = cli_run(shared_gateway, "merchant", "list")
    assert human.returncode == 0, human.stderr
    line = next(line for line in human.stdout.splitlines() if shop.login in line)
    assert str(listed[shop.login]["id"]) in line
    assert not human.stdout.lstrip().startswith(("[", "{"))


def test_merchant_create_human_output_names_the_merchant_and_key(shared_gateway: Gateway) -> None:
    login = _login()
    human = cli_run(shared_gateway, "merchant", "create", "--login", login)
    assert human.returncode == 0, human.stderr
    assert login in human.stdout
    listed = {m["login"]: m for m in shared_gateway.cli("merchant", "list")}
    assert listed[login]["control_key"] in human.stdout


def test_merchant_create_with_a_taken_login_fails_readably(shared_gateway: Gateway, shop: Merchant) -> None:
    message = readable_failure(shared_gateway, "merchant", "create", "--login", shop.login)
    assert shop.login in message


# --- endpoints ---------------------------------------------------------------------------------------------


def test_endpoint_create_with_an_id_serves_sales_on_that_id(shared_gateway: Gateway, shop: Merchant) -> None:
    chosen = random.randint(700_000, 799_999)
    created = shared_gateway.cli(
        "endpoint", "create", "--merchant", shop.login, "--currency", "USD", "--id", str(chosen)
    )
    assert created["id"] == chosen
    assert created["merchant"] == shop.login
    assert created["currency"] == "USD"
    assert created["mode"] == "sandbox"
    answer = Merchant(shared_gateway, shop.login, shop.control_key, chosen).sale(_order())
    assert answer.status_code == 200, answer.text
    assert answer.json()["end-point-id"] == str(chosen)

    following = shared_gateway.cli("endpoint", "create", "--merchant", shop.login, "--currency", "USD")
    assert following["id"] not in (chosen, shop.endpoint_id)
    answer = Merchant(shared_gateway, shop.login, shop.control_key, following["id"]).sale(_order())
    assert answer.status_code == 200, answer.text


def test_endpoint_create_with_a_taken_id_fails_readably(shared_gateway: Gateway, shop: Merchant) -> None:
    readable_failure(
        shared_gateway,
        "endpoint",
        "create",
        "--merchant",
        shop.login,
        "--currency",
        "USD",
        "--id",
        str(shop.endpoint_id),
    )


def test_endpoint_create_for_an_unknown_merchant_fails_readably(shared_gateway: Gateway) -> None:
    login = _login()
    assert login in readable_failure(shared_gateway, "endpoint", "create", "--merchant", login, "--currency", "USD")


def test_endpoint_create_with_an_unknown_currency_fails_readably(shared_gateway: Gateway, shop: Merchant) -> None:
    readable_failure(shared_gateway, "endpoint", "create", "--merchant", shop.login, "--currency", "XYZ")


def test_endpoint_create_in_live_mode_is_listed_as_live_with_its_connection(
    shared_gateway: Gateway, shop: Merchant
) -> None:
    connection = unreachable_connection(shared_gateway)
    created = shared_gateway.cli(
        "endpoint", "create", "--merchant", shop.login, "--currency", "EUR", "--mode", "live",
        "--descriptor", "SHOP*LIVE", "--connection", connection,
    )  # fmt: skip
    assert (created["mode"], created["connections"]) == ("live", [connection])
    assert created["descriptor"] == "SHOP*LIVE"
    listed = {e["id"]: e for e in shared_gateway.cli("endpoint", "list")}
    assert listed[created["id"]]["mode"] == "live"
    assert listed[created["id"]]["currency"] == "EUR"
    assert listed[created["id"]]["merchant"] == shop.login


def test_endpoint_list_human_output_has_a_line_per_endpoint(shared_gateway: Gateway, shop: Merchant) -> None:
    human = cli_run(shared_gateway, "endpoint", "list")
    assert human.returncode == 0, human.stderr
    line = next(line for line in human.stdout.splitlines() if line.split()[0] == str(shop.endpoint_id))
    assert shop.login in line
    assert "USD" in line
    assert "sandbox" in line


@pytest.fixture(scope="module")
def limited(shared_gateway: Gateway, shop: Merchant) -> Merchant:
    created = shared_gateway.cli(
        "endpoint",
        "create",
        "--merchant",
        shop.login,
        "--currency",
        "USD",
        "--min-amount",
        "5",
        "--max-amount",
        "100.00",
    )
    assert created["min_amount"] == 500
    assert created["max_amount"] == 10000
    return Merchant(shared_gateway, shop.login, shop.control_key, created["id"])


@pytest.mark.parametrize("amount", ["4.99", "100.01", "1000"])
def test_sale_outside_the_endpoint_limits_is_refused_with_code_7(limited: Merchant, amount: str) -> None:
    refused(limited.sale(_order(), amount=amount), 7)


@pytest.mark.parametrize("amount", ["5.00", "100.00"])
def test_sale_at_the_endpoint_limits_is_accepted(limited: Merchant, amount: str) -> None:
    answer = limited.sale(_order(), amount=amount)
    assert answer.status_code == 200, answer.text


def test_endpoint_create_with_a_malformed_limit_fails_readably(shared_gateway: Gateway, shop: Merchant) -> None:
    readable_failure(
        shared_gateway, "endpoint", "create", "--merchant", shop.login, "--currency", "USD", "--min-amount", "1.234"
    )


def test_endpoint_replay_window_is_set_at_creation_or_by_update_and_shown(
    shared_gateway: Gateway, shop: Merchant
) -> None:
    created = shared_gateway.cli(
        "endpoint", "create", "--merchant", shop.login, "--currency", "USD", "--replay-window", "300"
    )
    assert created["replay_window"] == 300
    updated = shared_gateway.cli("endpoint", "update", "--id", str(created["id"]), "--replay-window", "60")
    assert updated["replay_window"] == 60
    listed = {e["id"]: e for e in shared_gateway.cli("endpoint", "list")}
    assert listed[created["id"]]["replay_window"] == 60
    assert listed[shop.endpoint_id]["replay_window"] == 0
    human = cli_run(shared_gateway, "endpoint", "list")
    line = next(line for line in human.stdout.splitlines() if line.split()[0] == str(created["id"]))
    assert "replay-window=60s" in line
    off = cli_run(shared_gateway, "endpoint", "update", "--id", str(created["id"]), "--replay-window", "0")
    assert off.returncode == 0, off.stderr
    assert "off" in off.stdout


@pytest.mark.parametrize("window", ["-1", "86401", "soon"])
def test_endpoint_update_with_a_window_out_of_range_fails_readably(
    shared_gateway: Gateway, shop: Merchant, window: str
) -> None:
    readable_failure(shared_gateway, "endpoint", "update", "--id", str(shop.endpoint_id), "--replay-window", window)


def test_endpoint_update_of_an_unknown_endpoint_or_a_group_fails_readably(
    shared_gateway: Gateway, shop: Merchant
) -> None:
    assert "99999999" in readable_failure(
        shared_gateway, "endpoint", "update", "--id", "99999999", "--replay-window", "60"
    )
    group = shared_gateway.cli("group", "create", "--merchant", shop.login, "--endpoints", str(shop.endpoint_id))
    assert "group" in readable_failure(
        shared_gateway, "endpoint", "update", "--id", str(group["id"]), "--replay-window", "60"
    )


# --- groups ------------------------------------------------------------------------------------------------


def test_group_create_lists_its_members(shared_gateway: Gateway, shop: Merchant) -> None:
    eur = shared_gateway.cli("endpoint", "create", "--merchant", shop.login, "--currency", "EUR")
    group = shared_gateway.cli(
        "group", "create", "--merchant", shop.login, "--endpoints", f"{shop.endpoint_id},{eur['id']}"
    )
    assert group["kind"] == "group"
    assert group["merchant"] == shop.login
    assert sorted(group["members"]) == sorted([shop.endpoint_id, eur["id"]])
    assert group["id"] not in (shop.endpoint_id, eur["id"])
    listed = {e["id"]: e for e in shared_gateway.cli("endpoint", "list")}
    assert listed[group["id"]]["kind"] == "group"


def test_group_of_another_merchants_endpoint_fails_readably(
    shared_gateway: Gateway, shop: Merchant, stranger: Merchant
) -> None:
    readable_failure(
        shared_gateway,
        "group",
        "create",
        "--merchant",
        shop.login,
        "--endpoints",
        f"{shop.endpoint_id},{stranger.endpoint_id}",
    )


# --- orders ------------------------------------------------------------------------------------------------


def test_order_show_masks_the_card_and_lists_transactions(shared_gateway: Gateway, sales: dict[str, str]) -> None:
    shown = shared_gateway.cli("order", "show", sales["approved"])
    assert shown["id"] == int(sales["approved"])
    assert shown["card"] == "411111******1111"
    assert shown["amount"] == "10.42"
    assert shown["currency"] == "USD"
    [sale] = shown["transactions"]
    assert sale["type"] == "sale"
    assert sale["status"] == "approved"
    assert sale["order_stage"] == "sale_approved"
    assert sale["amount"] == "10.42"
    assert sale["approval_code"]
    uuid.UUID(sale["serial_number"])
    assert CARD not in str(shown)


def test_order_show_of_a_declined_sale_shows_its_error_code(shared_gateway: Gateway, sales: dict[str, str]) -> None:
    [sale] = shared_gateway.cli("order", "show", sales["declined"])["transactions"]
    assert sale["status"] == "declined"
    assert sale["error_code"] == "116"


def test_order_show_human_output_is_masked_and_readable(shared_gateway: Gateway, sales: dict[str, str]) -> None:
    human = cli_run(shared_gateway, "order", "show", sales["approved"])
    assert human.returncode == 0, human.stderr
    assert sales["approved"] in human.stdout
    assert "411111******1111" in human.stdout
    assert "sale_approved" in human.stdout
    assert CARD not in human.stdout
    assert not human.stdout.lstrip().startswith("{")


def test_order_show_of_an_unknown_order_fails_readably(shared_gateway: Gateway) -> None:
    assert "987654321" in readable_failure(shared_gateway, "order", "show", "987654321")


def test_order_list_filters_by_merchant_and_status(
    shared_gateway: Gateway, shop: Merchant, stranger: Merchant, sales: dict[str, str]
) -> None:
    mine = shared_gateway.cli("order", "list", "--merchant", shop.login)
    assert {str(o["id"]) for o in mine} >= set(sales.values())
    assert all(o["endpoint_id"] != 0 for o in mine)

    approved = shared_gateway.cli("order", "list", "--merchant", shop.login, "--status", "approved")
    ids = {str(o["id"]) for o in approved}
    assert sales["approved"] in ids
    assert sales["declined"] not in ids
    assert {o["status"] for o in approved} == {"approved"}

    declined = shared_gateway.cli("order", "list", "--merchant", shop.login, "--status", "declined")
    assert [str(o["id"]) for o in declined] == [sales["declined"]]

    assert shared_gateway.cli("order", "list", "--merchant", stranger.login) == []


def test_order_list_without_merchant_lists_every_merchants_orders(
    shared_gateway: Gateway, sales: dict[str, str]
) -> None:
    ids = {str(o["id"]) for o in shared_gateway.cli("order", "list", "--status", "approved", "--limit", "100000")}
    assert sales["approved"] in ids
    assert sales["declined"] not in ids


def test_order_list_human_output_has_a_line_per_order(
    shared_gateway: Gateway, shop: Merchant, sales: dict[str, str]
) -> None:
    human = cli_run(shared_gateway, "order", "list", "--merchant", shop.login)
    assert human.returncode == 0, human.stderr
    line = next(line for line in human.stdout.splitlines() if line.split()[0] == sales["declined"])
    assert "declined" in line
    assert "10.42 USD" in line


def test_order_list_for_an_unknown_merchant_fails_readably(shared_gateway: Gateway) -> None:
    login = _login()
    assert login in readable_failure(shared_gateway, "order", "list", "--merchant", login)


def test_every_command_of_every_group_module_is_found_by_its_name_and_runs_importing_only_its_own_module() -> None:
    modules = {info.name for info in pkgutil.iter_modules(cli.__path__)} - {"common"}
    declared = {
        command.name: module
        for module in modules
        for command in importlib.import_module(f"kassa.ops.cli.{module}").COMMANDS
    }
    assert declared == cli.COMMAND_MODULES
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys; from kassa.ops.cli import main; main(['balance', '--help'],"
         " standalone_mode=False); print(sorted(m for m in sys.modules if m.startswith('kassa.ops.cli.')))"],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()[-1]  # fmt: skip
    assert loaded == str(["kassa.ops.cli.balances", "kassa.ops.cli.common"])


def test_a_command_on_a_database_without_kassas_tables_says_to_upgrade_it(tmp_path: Path) -> None:
    env = {**Gateway(f"sqlite:///{tmp_path / 'empty.db'}", tmp_path).env}
    done = run_kassa(["merchant", "create", "--login", "first"], env)
    assert (done.returncode, "Traceback" in done.stderr) == (1, False), done.stderr
    assert "kassa db upgrade" in done.stderr
