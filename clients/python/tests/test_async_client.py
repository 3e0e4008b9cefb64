"""The async client against the sandbox: the same operations, awaited."""

from __future__ import annotations

import asyncio

import pytest
from samples import CARD, CUSTOMER

from kassa_client import NotFoundError
from kassa_client.testing import Sandbox


def test_async_sale_refund_and_a_refusal(kassa_sandbox: Sandbox) -> None:
    async def flow() -> None:
        async with kassa_sandbox.async_client() as client:
            sale = await client.sale(client_orderid=kassa_sandbox.orderid(), amount="8.00", currency="USD",
                                     cvv2="123", **CARD, **CUSTOMER)  # fmt: skip
            assert (await client.wait_for_final(sale.orderid)).status == "approved"
            await client.refund(orderid=sale.orderid, client_orderid=sale.merchant_order_id)
            final = await client.wait_for_final(sale.orderid)
            assert (final.transaction_type, final.status) == ("reversal", "approved")
            with pytest.raises(NotFoundError):
                await client.get_card_info(cardrefid="999999999")

    asyncio.run(flow())
