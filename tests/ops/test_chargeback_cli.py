"""``kassa chargeback`` (CONTRACT §16) as a disputes clerk runs it against a live gateway: a chargeback on
a settled sale debits the merchant's balance, is called back to the merchant and shows in status; what is
more than is left is refused; a file is imported whole or not at all, and once; a dispute won credits back
once."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.gateway import Gateway, Merchant, cli_run, free_port, new_merchant
from tests.support.receiver import Receiver, running


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    with running(Receiver(free_port())) as found:
        yield found


@pytest.fixture
def shop(shared_gateway: Gateway) -> Merchant:
    return new_merchant(shared_gateway, f"m-{uuid.uuid4().hex[:10]}")


def settled_sale(shop: Merchant, amount: str = "10.42", **urls: str) -> str:
    """A sale approved and settled; its orderid."""
    answer = shop.sale(f"o-{uuid.uuid4().hex[:10]}", amount=amount, **urls)
    orderid = str(answer.json()["paynet-order-id"])
    assert shop.wait_final(orderid)["status"] == "approved"
    shop.gateway.cli("settle", "--endpoint", str(shop.endpoint_id))
    return orderid


def available(shop: Merchant) -> str:
    [usd] = shop.gateway.cli("balance", "show", "--merchant", shop.login)
    return str(usd["available"])


def refused(gateway: Gateway, *args: str) -> str:
    """A command that must fail with sentences on stderr, not a traceback."""
    done = cli_run(gateway, *args)
    assert done.returncode != 0, done.stdout
    assert "Traceback" not in done.stderr, done.stderr
    return done.stderr


def test_chargeback_on_a_settled_sale_debits_the_balance_calls_back_and_shows_in_status(
    shop: Merchant, receiver: Receiver
) -> None:
    url = f"{receiver.url}/{shop.login}"
    orderid = settled_sale(shop, server_callback_url=url, notify_url=url)
    assert available(shop) == "10.42"
    created = shop.gateway.cli("chargeback", "create", "--order", orderid, "--amount", "4.00", "--reason", "13.1")
    assert (created["order"], created["amount"], created["new"]) == (int(orderid), "4.00 USD", True)
    assert available(shop) == "6.42"
    received = [r.query for r in receiver.wait_for(4) if r.path.endswith(shop.login)]
    called_back = [q for q in received if q["type"] == "chargeback"]
    assert len(called_back) == 2  # the server_callback_url and the notify_url
    assert {(q["status"], q["orderid"], q["amount"]) for q in called_back} == {("approved", orderid, "4.00")}
    status = shop.status(orderid=orderid).json()
    assert (status["transaction-type"], status["order-stage"], status["amount"]) == (
        "chargeback",
        "chargeback_approved",
        "4.00",
    )
    assert shop.gateway.cli("ledger", "check")["ok"]


def test_chargeback_above_what_is_left_is_refused_saying_how_much_is_left(shop: Merchant) -> None:
    orderid = settled_sale(shop)
    shop.gateway.cli("chargeback", "create", "--order", orderid, "--amount", "10.00", "--reason", "4837")
    message = refused(shop.gateway, "chargeback", "create", "--order", orderid, "--amount", "1.00", "--reason", "4853")
    assert "exceeds what is left to charge back" in message and "0.42 USD left" in message
    assert available(shop) == "0.42"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--order", "1", "--rrn", "2"), "--order or --rrn"),
        (("--order", "1", "--reason", "99.9"), "--reason '99.9'"),
        (("--order", "1", "--date", "2026-13-01"), "--date must be a date"),
        (("--order", "1", "--date", "2999-01-01"), "--date 2999-01-01 is after today"),
        (("--order", "x1"), "--order must be the gateway's order id"),
    ],
)
def test_chargeback_create_names_the_option_at_fault(
    shared_gateway: Gateway, args: tuple[str, ...], named: str
) -> None:
    given = dict(zip(args[::2], args[1::2], strict=True))
    line = {"--amount": "1.00", "--reason": "10.4", **given}
    message = refused(shared_gateway, "chargeback", "create", *(part for pair in line.items() for part in pair))
    assert named in message


def test_chargeback_create_names_an_amount_the_orders_currency_cannot_have(shop: Merchant) -> None:
    orderid = settled_sale(shop)
    message = refused(shop.gateway, "chargeback", "create", "--order", orderid, "--amount", "1.001", "--reason", "10.4")
    assert "--amount allows at most 2 fraction digits for USD" in message
    assert available(shop) == "10.42"


def _file(tmp_path: Path, *lines: str) -> str:
    path = tmp_path / f"report-{uuid.uuid4().hex[:6]}.csv"
    path.write_text("\n".join(["orderid,processor-rrn,amount,currency,reason-code,date", *lines]) + "\n")
    return str(path)


def test_import_of_a_file_with_a_bad_line_imports_nothing_and_names_the_line(shop: Merchant, tmp_path: Path) -> None:
    first, second = settled_sale(shop), settled_sale(shop)
    report = _file(
        tmp_path,
        f"{first},,1.00,USD,10.4,2026-01-05",
        f"{second},,1.00,EUR,10.4,2026-01-05",
        f"{second},,20.00,USD,13.1,2026-01-05",
    )
    message = refused(shop.gateway, "chargeback", "import", report)
    assert "line 3: currency EUR is not the order's currency USD" in message
    assert f"line 4: order {second}: amount exceeds what is left to charge back" in message
    assert "2 line(s) refused, nothing imported" in message
    assert available(shop) == "20.84"
    assert shop.gateway.cli("chargeback", "list", "--merchant", shop.login) == []


def test_importing_the_same_file_twice_records_each_chargeback_once(shop: Merchant, tmp_path: Path) -> None:
    first, second = settled_sale(shop), settled_sale(shop)
    rrn = shop.status(orderid=second).json()["processor-rrn"]
    report = _file(tmp_path, f"{first},,1.00,USD,10.4,2026-01-05", f",{rrn},2.50,USD,4853,2026-01-06")
    once = shop.gateway.cli("chargeback", "import", report)
    again = shop.gateway.cli("chargeback", "import", report)
    assert (len(once["recorded"]), once["already"]) == (2, 0)
    assert (again["recorded"], again["already"]) == ([], 2)
    assert available(shop) == "17.34"
    listed = shop.gateway.cli("chargeback", "list", "--merchant", shop.login)
    assert [(d["order"], d["reason_code"], d["reason"]) for d in listed] == [
        (int(first), "10.4", "Other fraud, card absent"),
        (int(second), "4853", "Cardholder dispute (not as described, defective, counterfeit)"),
    ]


def test_a_dispute_won_credits_back_once_and_a_lost_one_does_not(shop: Merchant) -> None:
    orderid = settled_sale(shop)
    won = shop.gateway.cli("chargeback", "create", "--order", orderid, "--amount", "3.00", "--reason", "10.4")
    lost = shop.gateway.cli("chargeback", "create", "--order", orderid, "--amount", "2.00", "--reason", "13.1")
    assert available(shop) == "5.42"
    closed = shop.gateway.cli("chargeback", "close", "--id", str(won["dispute"]), "--won")
    assert (closed["state"], closed["credited"]) == ("won", "3.00 USD")
    assert "already closed (won)" in refused(shop.gateway, "chargeback", "close", "--id", str(won["dispute"]), "--won")
    shop.gateway.cli("chargeback", "close", "--id", str(lost["dispute"]), "--lost")
    assert available(shop) == "8.42"
    assert shop.gateway.cli("chargeback", "list", "--merchant", shop.login) == []
    assert [d["state"] for d in shop.gateway.cli("chargeback", "list", "--merchant", shop.login, "--state", "won")] == [
        "won"
    ]
    assert shop.gateway.cli("ledger", "check")["ok"]
