"""The console's orders: the search (by ids, card, dates, merchant, amount; keyset pages; CSV), one order
in full with its callbacks, and what support and admins may do to it from the page."""

from __future__ import annotations

import datetime
import html
import random
import re
import time
import uuid
from collections.abc import Callable

import httpx

from tests.support.acquirer_host import host_on_a_thread
from tests.support.console import ConsoleClient
from tests.support.gateway import Gateway, Merchant, free_port
from tests.support.operations import preauth
from tests.support.receiver import Receiver, running

Console = Callable[[str], ConsoleClient]


def _pan() -> str:
    """A Visa number of its own (Luhn-valid), so a search by its last four finds this test's orders."""
    digits = [4] + [random.randrange(10) for _ in range(14)]
    total = sum(d if i % 2 else (d * 2 - 9 if d * 2 > 9 else d * 2) for i, d in enumerate(digits))
    return "".join(map(str, digits)) + str((10 - total % 10) % 10)


def _sale(merchant: Merchant, pan: str, amount: str = "10.42", **fields: str) -> tuple[str, str]:
    """A sale made through the API and approved; its client_orderid and orderid."""
    client_orderid = f"c-{uuid.uuid4().hex[:12]}"
    answer = merchant.sale(client_orderid, amount=amount, credit_card_number=pan, **fields)
    orderid = answer.json()["paynet-order-id"]
    assert merchant.wait_final(orderid)["status"] == "approved"
    return client_orderid, orderid


def _found(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return re.findall(r'<td><a href="/orders/(\d+)">', answer.text)


def _today() -> str:
    return datetime.datetime.now(datetime.UTC).date().isoformat()


def test_a_sale_is_found_by_each_of_its_ids_its_card_and_date_its_merchant_and_its_amount(
    merchant: Merchant, console_as: Console
) -> None:
    pan = _pan()
    client_orderid, orderid = _sale(merchant, pan, amount="7654.31")
    viewer = console_as("viewer")
    today = _today()
    for search in (
        {"client_orderid": client_orderid},
        {"orderid": orderid},
        {"card": pan[-4:], "from": today, "to": today},
        {"card": pan[:6], "merchant": merchant.login},
        {"merchant": merchant.login},
        {"endpoint": str(merchant.endpoint_id), "status": "approved", "type": "sale"},
        {"min": "7654.30", "max": "7654.31"},
    ):
        assert orderid in _found(viewer.get("/orders", **search)), search
    wrong = f"{(int(pan[-4:]) + 1) % 10_000:04d}"
    for search in (
        {"client_orderid": client_orderid, "card": wrong},
        {"merchant": merchant.login, "status": "declined"},
        {"merchant": merchant.login, "min": "7654.32"},
        {"merchant": merchant.login, "from": "2001-01-01", "to": "2001-01-31"},
        {"merchant": f"nobody-{uuid.uuid4().hex[:8]}"},
    ):
        assert orderid not in _found(viewer.get("/orders", **search)), search


def test_keyset_pages_show_every_order_exactly_once(merchant: Merchant, console_as: Console) -> None:
    made = {_sale(merchant, _pan())[1] for _ in range(5)}
    viewer = console_as("viewer")
    seen: list[str] = []
    answer = viewer.get("/orders", merchant=merchant.login, size="2")
    for _ in range(10):
        seen += _found(answer)
        older = re.search(r'<a href="(/orders\?[^"]*)" rel="next">', answer.text)
        if older is None:
            break
        answer = viewer.http.get(html.unescape(older[1]))  # the link as it is, query and all
    assert sorted(seen) == sorted(made)
    assert [int(i) for i in seen] == sorted((int(i) for i in seen), reverse=True)  # newest first


def test_bad_filters_give_the_form_back_naming_the_field_not_a_500(console_as: Console) -> None:
    viewer = console_as("viewer")
    for search, named in (
        ({"from": "yesterday"}, "From date"),
        ({"to": "2026-02-30"}, "To date"),
        ({"card": "12ab"}, "Card"),
        ({"card": "12345"}, "Card"),
        ({"min": "ten"}, "Amount from"),
        ({"orderid": "x1"}, "Order id"),
        ({"status": "paid"}, "Status"),
    ):
        answer = viewer.get("/orders", **search)
        assert answer.status_code == 400, search
        assert named in answer.text and 'role="search"' in answer.text
        assert viewer.get("/orders.csv", **search).status_code == 400


def test_the_csv_export_holds_the_orders_found_with_cards_masked(merchant: Merchant, console_as: Console) -> None:
    pan = _pan()
    made = [_sale(merchant, pan) for _ in range(2)]
    answer = console_as("viewer").get("/orders.csv", merchant=merchant.login)
    assert answer.status_code == 200
    assert answer.headers["content-disposition"].startswith("attachment;")
    lines = answer.text.strip().splitlines()
    assert lines[0].startswith("order_id,created_utc,merchant")
    assert len(lines) == 3
    for client_orderid, orderid in made:
        assert any(line.startswith(f"{orderid},") and client_orderid in line for line in lines)
    assert pan not in answer.text and f"{pan[:6]}******{pan[-4:]}" in answer.text


def _wait_for_attempts(client: ConsoleClient, orderid: str, count: int, timeout: float = 15) -> str:
    deadline = time.monotonic() + timeout
    while True:
        page = client.get(f"/orders/{orderid}").text
        if page.count('<tr class="attempt">') >= count or time.monotonic() > deadline:
            return page
        time.sleep(0.1)


def test_the_order_page_shows_transactions_masked_card_and_each_callback_attempt_with_its_answer(
    merchant: Merchant, console_as: Console
) -> None:
    pan = _pan()
    with running(Receiver(free_port())) as receiver:
        _, orderid = _sale(merchant, pan, server_callback_url=receiver.url)
        receiver.wait_for(1)
        page = _wait_for_attempts(console_as("viewer"), orderid, 1)
    assert f"Order {orderid}" in page and "sale_approved" in page
    assert f"{pan[:6]}******{pan[-4:]}" in page and pan not in page
    attempt = re.search(r'<tr class="attempt">(.*?)</tr>', page, re.S)
    assert attempt is not None
    assert "<td>200</td>" in attempt[1] and '<code class="wrap">OK</code>' in attempt[1]
    assert "Redeliver callbacks" not in page  # a viewer reads only


def test_support_redelivers_a_failed_callback_from_the_page_and_the_audit_log_has_it(
    merchant: Merchant, console_as: Console, shared_gateway: Gateway
) -> None:
    with running(Receiver(free_port(), script=["500"])) as receiver:
        _, orderid = _sale(merchant, _pan(), server_callback_url=receiver.url)
        support = console_as("support")
        page = _wait_for_attempts(support, orderid, 1)
        assert "<td>500</td>" in page and "Redeliver callbacks" in page
        path = f"/orders/{orderid}/redeliver"
        confirm = support.post(path, {}, from_page=f"/orders/{orderid}")
        assert confirm.status_code == 200 and "Yes, redeliver" in confirm.text
        assert support.post(path, {"confirmed": "yes"}, from_page=f"/orders/{orderid}").status_code == 303
        assert len(receiver.wait_for(1, timeout=10)) == 1  # well before the first retry, 15 s after the 500
    audit = console_as("admin").get("/audit", action="callback.redeliver").text
    assert f"order {orderid}" in audit and "redelivered" in audit


def test_a_viewers_redeliver_post_is_refused(merchant: Merchant, console_as: Console) -> None:
    _, orderid = _sale(merchant, _pan())
    viewer = console_as("viewer")
    answer = viewer.post(f"/orders/{orderid}/redeliver", {"confirmed": "yes"}, from_page=f"/orders/{orderid}")
    assert answer.status_code == 403


def test_an_admin_captures_an_approved_preauth_from_the_page_within_its_amount(
    merchant: Merchant, console_as: Console
) -> None:
    client_orderid = f"p-{uuid.uuid4().hex[:12]}"
    orderid = preauth(merchant, client_orderid, amount="50.00").json()["paynet-order-id"]
    assert merchant.wait_final(orderid)["status"] == "approved"
    admin = console_as("admin")
    page = admin.get(f"/orders/{orderid}").text
    assert all(f'action="/orders/{orderid}/{name}"' in page for name in ("capture", "void", "return"))
    detail = f"/orders/{orderid}"
    too_much = admin.post(f"{detail}/capture", {"confirmed": "yes", "amount": "60.00"}, from_page=detail)
    assert too_much.status_code == 409 and "amount exceeds the remaining authorization" in too_much.text
    assert "Yes, capture" in admin.post(f"{detail}/capture", {"amount": "20.00"}, from_page=detail).text
    done = admin.post(f"{detail}/capture", {"confirmed": "yes", "amount": "20.00"}, from_page=detail)
    assert done.status_code == 303
    status = merchant.wait_stage(orderid, leaving="capture_processing")
    assert status["status"] == "approved" and status.get("order-stage") == "capture_approved", status
    after = admin.get(detail).text
    assert "capture_approved" in after and "20.00 USD" in after
    assert f'action="/orders/{orderid}/capture"' not in after  # captured once: no second capture offered
    audit = admin.get("/audit", action="order.capture").text
    assert f"order {orderid}" in audit and "refused" in audit and "done" in audit


def test_the_order_page_lists_each_acquirer_a_cascaded_sale_was_sent_to(
    make_merchant: Callable[..., Merchant], console_as: Console
) -> None:
    merchant = make_merchant()
    suffix = uuid.uuid4().hex[:8]
    with host_on_a_thread(answer_with="91") as failing, host_on_a_thread() as approving:
        for name, host in ((f"failing-{suffix}", failing), (f"approving-{suffix}", approving)):
            merchant.gateway.cli(
                "acquirer", "create", "--name", name, "--host", "127.0.0.1", "--port", str(host.port),
                "--acquiring-institution-id", "123456", "--terminal-id", "TERM0003",
                "--card-acceptor-id", "SHOP00000000003", "--mcc", "5999", "--response-timeout", "0.5",
            )  # fmt: skip
        route = (f"failing-{suffix}", f"approving-{suffix}")
        merchant.gateway.cli("endpoint", "connections", "--id", str(merchant.endpoint_id), *route)
        orderid = merchant.sale(f"cascade-{suffix}").json()["paynet-order-id"]
        final = merchant.wait_final(orderid)
    page = console_as("viewer").get(f"/orders/{orderid}").text
    assert final["status"] == "approved"
    tries = re.findall(
        r"<li>([a-z0-9-]+): 0200 STAN \d{6}, RRN <code>(\d{12})</code>.*?: (\w+), answer (\d\d)</li>", page
    )
    assert [(name, state, code) for name, _, state, code in tries] == [
        (f"failing-{suffix}", "answered", "91"),
        (f"approving-{suffix}", "answered", "00"),
    ]
    assert tries[1][1] == final["processor-rrn"]
