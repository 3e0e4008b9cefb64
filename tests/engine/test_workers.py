"""Workers on many processes share one PostgreSQL queue and never take the same job twice."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.engine.test_recovery import captured_once
from tests.support.gateway import KASSA, Gateway, new_merchant


@pytest.mark.backends("postgresql")
def test_two_worker_processes_never_process_one_job_twice(gateway_factory: Callable[..., Gateway]) -> None:
    api = gateway_factory("--workers", "0")
    merchant = new_merchant(api, "workers")
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda n: merchant.sale(f"w-{n}").json(), range(200)))
    order_ids = {int(a["paynet-order-id"]) for a in answers}
    assert len(order_ids) == 200

    logs = [(api.data_dir / f"worker-{n}.log").open("wb") for n in range(2)]  # read when the test fails
    workers = [subprocess.Popen([KASSA, "worker", "--workers", "2"], env=api.env, stderr=log) for log in logs]
    try:
        finals = [merchant.wait_final(str(order_id), timeout=60)["status"] for order_id in sorted(order_ids)]
    finally:
        for worker in workers:
            worker.terminate()
            worker.wait(10)
    assert finals == ["approved"] * 200
    assert captured_once(merchant, "2084.00")  # 200 sales of 10.42, each recorded once
