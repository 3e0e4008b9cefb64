"""The operations listener: Prometheus figures of what the gateway did, counted once each, and health
answers a supervisor or a load balancer can act on; none of it on the merchant API's listener."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support.databases import run_sql
from tests.support.gateway import KASSA, TLS, Gateway, Merchant, free_port, new_merchant
from tests.support.receiver import Receiver, running

DASHBOARD = Path(__file__).parents[2] / "docs" / "grafana" / "kassa.json"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(gateway: Gateway) -> Samples:
    return scrape_at(gateway.ops)


def scrape_at(ops: str) -> Samples:
    answer = httpx.get(f"{ops}/metrics", timeout=10, verify=TLS)
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def scrape_when(gateway: Gateway, condition: Callable[[Samples], bool], timeout: float = 10) -> Samples:
    """The first scrape that meets ``condition``, or the one at ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition(samples := scrape(gateway)) and time.monotonic() < deadline:
        time.sleep(0.05)
    return samples


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def sale_with_callback(merchant: Merchant, receiver: Receiver, cvv2: str) -> dict[str, str]:
    answer = merchant.sale(f"m-{uuid.uuid4().hex[:10]}", cvv2=cvv2, server_callback_url=receiver.url)
    assert answer.status_code == 200, answer.text
    return merchant.wait_final(answer.json()["paynet-order-id"])


def test_a_sale_a_decline_a_refusal_and_their_callbacks_are_each_counted_once(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory()
    merchant = new_merchant(gateway, f"metrics-{uuid.uuid4().hex[:8]}")
    with running(Receiver(free_port())) as receiver:
        assert sale_with_callback(merchant, receiver, "123")["status"] == "approved"
        assert sale_with_callback(merchant, receiver, "116")["status"] == "declined"
        refused = gateway.post(f"/api/v2/sale/{merchant.endpoint_id}", {**merchant.sale_fields("bad"), "control": "0"})
        assert refused.json()["error-code"] == "2"
        receiver.wait_for(2)
        # The receiver has both a moment before the gateway counts the second delivery.
        samples = scrape_when(gateway, lambda s: value(s, "kassa_callback_attempts_total", result="delivered") >= 2)

    assert value(samples, "kassa_requests_total", operation="SALE", http_status="200", error_code="") == 2
    refusals = value(
        samples, "kassa_requests_total", operation="SALE", http_status=str(refused.status_code), error_code="2"
    )
    assert refusals == 1
    assert value(samples, "kassa_request_duration_seconds_count", operation="SALE") == 3
    assert value(samples, "kassa_outcomes_total", status="approved", decline_code="") == 1
    declines = {
        dict(labels)["decline_code"]: n
        for (name, labels), n in samples.items()
        if name == "kassa_outcomes_total" and ("status", "declined") in labels
    }
    assert list(declines.values()) == [1] and list(declines) != [""], declines
    assert value(samples, "kassa_callback_attempts_total", result="delivered") == 2
    assert value(samples, "kassa_callback_attempt_duration_seconds_count") == 2
    assert value(samples, "kassa_callbacks_pending") == 0
    assert ("kassa_db_connections_in_use", frozenset()) in samples  # none may be in use at the scrape
    assert value(samples, "kassa_jobs_queued", kind="process") == 0  # every kind shown, idle ones too
    assert value(samples, "kassa_job_failures_total", kind="reconcile") == 0
    assert dashboard_metrics() <= {name for name, _ in samples}, "the dashboard charts a metric nobody exposes"


def dashboard_metrics() -> set[str]:
    """Every kassa metric the Grafana dashboard in docs/ queries."""
    panels = json.loads(DASHBOARD.read_text())["panels"]
    expressions = " ".join(target["expr"] for panel in panels for target in panel["targets"])
    return set(re.findall(r"kassa_[a-z_]+", expressions))


def test_queue_figures_show_a_waiting_job_and_how_long_it_has_been_due(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory(KASSA_WORKERS="0")  # an API-only process: the job waits
    merchant = new_merchant(gateway, f"queue-{uuid.uuid4().hex[:8]}")
    assert merchant.sale(f"q-{uuid.uuid4().hex[:8]}").status_code == 200
    run_sql(gateway.database_url, "UPDATE jobs SET run_at_ms = run_at_ms - 90000")
    samples = scrape(gateway)
    assert value(samples, "kassa_jobs_queued", kind="process") == 1
    assert value(samples, "kassa_jobs_oldest_due_age_seconds", kind="process") >= 90


def test_the_figures_of_every_server_process_are_added_up(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory("--processes", "2")
    merchant = new_merchant(gateway, f"sum-{uuid.uuid4().hex[:8]}")
    for n in range(12):  # new connections: the kernel spreads them over both processes
        assert merchant.sale(f"sum-{n}").status_code == 200
    answers = [scrape(gateway) for _ in range(4)]  # whichever process answers the scrape
    assert {
        value(samples, "kassa_requests_total", operation="SALE", http_status="200", error_code="")
        for samples in answers
    } == {12}


def test_metrics_and_health_are_not_on_the_merchant_api_listener(shared_gateway: Gateway) -> None:
    for path in ("/metrics", "/livez", "/readyz", "/paynet/metrics"):
        assert httpx.get(f"http://127.0.0.1:{shared_gateway.port}{path}", timeout=10, verify=TLS).status_code == 404


def test_a_serving_gateway_is_alive_and_ready_with_every_check_named(shared_gateway: Gateway) -> None:
    assert httpx.get(f"{shared_gateway.ops}/livez", timeout=10, verify=TLS).json() == {"status": "alive"}
    ready = httpx.get(f"{shared_gateway.ops}/readyz", timeout=10, verify=TLS)
    assert ready.status_code == 200
    body = ready.json()
    assert body["status"] == "ready"
    assert set(body["checks"]) == {"database", "migrations", "vault", "workers", "acquirers"}
    assert all(said.startswith("ok") for said in body["checks"].values()), body


def test_a_schema_behind_the_code_makes_the_process_not_ready(gateway_factory: Callable[..., Gateway]) -> None:
    gateway = gateway_factory()
    run_sql(gateway.database_url, "UPDATE alembic_version SET version_num = '0013'")
    ready = httpx.get(f"{gateway.ops}/readyz", timeout=10, verify=TLS)
    assert ready.status_code == 503
    assert ready.json()["status"] == "not ready"
    assert "kassa db upgrade" in ready.json()["checks"]["migrations"]


def test_a_vault_key_that_does_not_open_stored_data_makes_the_process_not_ready(
    gateway_factory: Callable[..., Gateway],
) -> None:
    first = gateway_factory()
    new_merchant(first, f"vault-{uuid.uuid4().hex[:8]}")
    first.stop()
    other_key = "b29vb29vb29vb29vb29vb29vb29vb29vb29vb29vb28="  # not the key the data was sealed with
    second = gateway_factory(KASSA_VAULT_KEY=other_key)
    ready = httpx.get(f"{second.ops}/readyz", timeout=10, verify=TLS)
    assert ready.status_code == 503
    assert "KASSA_VAULT_KEY" in ready.json()["checks"]["vault"]
    assert ready.json()["checks"]["database"] == "ok"


def test_a_worker_process_serves_its_own_health_and_figures_and_stops_on_sigterm(
    gateway_factory: Callable[..., Gateway],
) -> None:
    gateway = gateway_factory(KASSA_WORKERS="0")  # the API alone: the worker below processes the sale
    port = free_port()
    log = (gateway.data_dir / "worker.log").open("ab")
    worker = subprocess.Popen([KASSA, "worker", "--ops", f"127.0.0.1:{port}"], env=gateway.env, stdout=log, stderr=log)
    try:
        ops = f"http://127.0.0.1:{port}"
        wait_for_ready(ops)
        checks = httpx.get(f"{ops}/readyz", timeout=10, verify=TLS).json()["checks"]
        assert httpx.get(f"{ops}/readyz", headers={"Host": "evil.example"}, timeout=10, verify=TLS).status_code == 421
        assert checks["workers"].startswith("ok (") and checks["workers"] != "ok (none in this process)"
        merchant = new_merchant(gateway, f"worker-{uuid.uuid4().hex[:8]}")
        sale = merchant.sale(f"w-{uuid.uuid4().hex[:8]}")
        assert merchant.wait_final(sale.json()["paynet-order-id"])["status"] == "approved"
        samples = scrape_at(ops)
        assert value(samples, "kassa_outcomes_total", status="approved", decline_code="") == 1
        assert value(scrape(gateway), "kassa_outcomes_total", status="approved", decline_code="") == 0
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0


def wait_for_ready(ops: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if httpx.get(f"{ops}/readyz", timeout=5, verify=TLS).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, "the process did not become ready"
        time.sleep(0.05)
