"""Settlement in the console: an admin runs it, the run is listed with its sums, and its CSV holds the
run's transactions with no full card number."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable

from tests.support.console import ConsoleClient
from tests.support.gateway import Gateway, Merchant
from tests.support.operations import approved_order


def test_settling_an_approved_sale_lists_the_run_and_exports_it_as_csv(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    order_id = approved_order(merchant, "to-settle", amount="10.42")
    admin = console_as("admin")
    settled = admin.post("/settlement", {"endpoint": str(merchant.endpoint_id)}, from_page="/settlement")
    assert settled.status_code == 303
    found = re.fullmatch(r"/settlement\?settled=1&at=(\d+)", settled.headers["location"])
    assert found, settled.headers["location"]
    at = found[1]
    [ledger] = shared_gateway.cli("ledger", "balance", "--merchant", merchant.login)
    assert (ledger["settled"], ledger["captured_unsettled"]) == ("10.42", "0.00")

    runs = admin.get("/settlement", settled="1", at=at).text
    assert "1 orders settled" in runs and f'href="/settlement/{at}.csv"' in runs

    exported = admin.get(f"/settlement/{at}.csv")
    assert exported.status_code == 200 and exported.headers["content-type"].startswith("text/csv")
    assert exported.headers["content-disposition"] == f'attachment; filename="settlement-{at}.csv"'
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert [(r["order_id"], r["client_orderid"], r["merchant"]) for r in rows] == [
        (order_id, "to-settle", merchant.login)
    ]
    assert (rows[0]["amount"], rows[0]["currency"], rows[0]["type"]) == ("10.42", "USD", "sale")
    assert rows[0]["card"] == "411111******1111" and "4111111111111111" not in exported.text
    assert "settlement.run" in admin.get("/audit", action="settlement.run").text


def test_settlement_for_an_unknown_endpoint_is_refused_and_a_viewer_may_not_run_it(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], merchant: Merchant
) -> None:
    approved_order(merchant, "stays-unsettled", amount="1.00")
    admin, viewer = console_as("admin"), console_as("viewer")
    unknown = admin.post("/settlement", {"endpoint": "999999999"})
    assert unknown.status_code == 400 and "Endpoint 999999999 does not exist" in unknown.text
    assert admin.post("/settlement", {"endpoint": "five"}).status_code == 400
    assert viewer.post("/settlement", {"endpoint": str(merchant.endpoint_id)}).status_code == 403
    [ledger] = shared_gateway.cli("ledger", "balance", "--merchant", merchant.login)
    assert (ledger["settled"], ledger["captured_unsettled"]) == ("0.00", "1.00")
    assert admin.get("/settlement/1.csv").status_code == 404
