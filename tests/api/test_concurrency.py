"""Concurrent requests on one order can never move more money than the rules allow (CONTRACT §7), and
concurrent repeats of one order-starting request open one order."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.api.test_card_refs import stored_card
from tests.api.test_transfers import DESTINATION, v2_transfer_by_ref
from tests.support.balances import available, credit
from tests.support.gateway import Gateway, Merchant, new_merchant
from tests.support.operations import LEDGER_OK, approved_order, final, ledger_check, refund


def _fifty_partial_returns(merchants: list[Merchant], order: str) -> Counter[str]:
    def one(n: int) -> str:
        answer = refund(merchants[n % len(merchants)], "race", order, "10.00")
        if answer.status_code != 200:
            return f"refused-{answer.json()['error-code']}"
        return final(merchants[0], answer)["status"]

    with ThreadPoolExecutor(50) as pool:
        return Counter(pool.map(one, range(50)))


def test_fifty_concurrent_partial_returns_approve_exactly_the_sale_amount(merchant: Merchant) -> None:
    order = approved_order(merchant, "race", amount="100.00")
    outcomes = _fifty_partial_returns([merchant], order)
    assert outcomes == Counter({"approved": 10, "refused-7": 40})
    assert merchant.status(orderid=order).json()["refunded-amount"] == "100.00"
    assert ledger_check(merchant) == LEDGER_OK


@pytest.mark.backends("postgresql")
def test_concurrent_returns_spread_over_two_server_processes_still_approve_exactly_the_sale_amount(
    gateway_factory: Callable[..., Gateway],
) -> None:
    first, second = gateway_factory(), gateway_factory()
    merchant = new_merchant(first, "two-nodes")
    on_second = Merchant(second, merchant.login, merchant.control_key, merchant.endpoint_id)
    order = approved_order(merchant, "race", amount="100.00")
    outcomes = _fifty_partial_returns([merchant, on_second], order)
    assert outcomes == Counter({"approved": 10, "refused-7": 40})
    assert ledger_check(merchant) == LEDGER_OK


def test_the_same_client_orderid_sent_twenty_times_at_once_creates_one_order(merchant: Merchant) -> None:
    client_orderid = f"dup-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(20) as pool:
        answers = list(pool.map(lambda _: merchant.sale(client_orderid), range(20)))
    assert {a.status_code for a in answers} == {200}
    assert len({a.json()["paynet-order-id"] for a in answers}) == 1
    listed = merchant.gateway.cli("order", "list", "--merchant", merchant.login)
    assert [o["client_orderid"] for o in listed].count(client_orderid) == 1


def test_ten_concurrent_repeats_of_a_v2_transfer_by_ref_move_its_money_once(merchant: Merchant) -> None:
    credit(merchant, "100.00")
    destination, client_orderid = stored_card(merchant, DESTINATION), f"tr-{uuid.uuid4().hex[:8]}"
    with ThreadPoolExecutor(10) as pool:
        answers = list(
            pool.map(lambda _: v2_transfer_by_ref(merchant, client_orderid, destination, "30.00"), range(10))
        )
    assert {a.status_code for a in answers} == {200}, [a.text for a in answers]
    [order] = {a.json()["paynet-order-id"] for a in answers}
    assert merchant.wait_final(order)["status"] == "approved"
    assert available(merchant) == "70.00"
    listed = merchant.gateway.cli("order", "list", "--merchant", merchant.login)
    assert [o["client_orderid"] for o in listed].count(client_orderid) == 1
    assert ledger_check(merchant) == LEDGER_OK
