"""Orders made before a status run: sales through the API, then a wait until the workers settled them,
so the status run measures reads alone."""

from __future__ import annotations

import asyncio
import time

import httpx

from bench.bodies import MerchantKeys, sale_body
from bench.server import PREFIX, KassaDeployment

HEADERS = {"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/vnd.pay+json"}


async def _sale(client: httpx.AsyncClient, path: str, body: str, gate: asyncio.Semaphore) -> str:
    async with gate:
        answer = await client.post(path, content=body, headers=HEADERS)
    data = answer.json()
    if answer.status_code != 200 or "paynet-order-id" not in data:
        raise RuntimeError(f"seeding sale refused: {answer.status_code} {answer.text[:300]}")
    return str(data["paynet-order-id"])


async def _create(base_url: str, merchant: MerchantKeys, count: int, concurrency: int) -> list[str]:
    path = f"{PREFIX}/api/v2/sale/{merchant.endpoint_id}"
    gate = asyncio.Semaphore(concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
        sales = (_sale(client, path, sale_body(merchant, f"seed-{n}"), gate) for n in range(count))
        return list(await asyncio.gather(*sales))


def create_orders(base_url: str, merchant: MerchantKeys, count: int, concurrency: int = 32) -> list[str]:
    """Make ``count`` sales; returns their paynet order ids."""
    return asyncio.run(_create(base_url, merchant, count, concurrency))


def wait_until_settled(deployment: KassaDeployment, login: str, timeout: float = 120) -> None:
    """Block until no order of ``login`` is still ``processing`` (asked through the operator CLI)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pending = deployment.cli("order", "list", "--merchant", login, "--status", "processing", "--limit", "1")
        if not pending:
            return
        time.sleep(0.5)
    raise RuntimeError(f"orders of {login} still processing after {timeout} s")
