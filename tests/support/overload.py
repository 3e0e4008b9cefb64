"""Driving a gateway's overload signals (the age of the oldest due job no worker holds, and of the oldest due
callback the dispatcher could send) without waiting for a real backlog: its waiting jobs or callbacks are
made due in the past, then its figures read until its sampler saw them."""

from __future__ import annotations

import time

import httpx

from tests.ops.test_probes import Samples, scrape, value
from tests.support.databases import run_sql
from tests.support.gateway import TLS, Gateway

TEST_CLOCK = "KASSA_TEST_CLOCK"


def gateway_now_ms(gateway: Gateway) -> int:
    """The gateway's clock: moved forward by tests when it runs with the test clock, else the wall clock."""
    if gateway.extra_env.get(TEST_CLOCK) == "1":
        return gateway.advance(0)
    return time.time_ns() // 1_000_000


def age_waiting_jobs(gateway: Gateway, seconds: float) -> None:
    """Every job no worker holds becomes due ``seconds`` ago, by the gateway's clock."""
    due = gateway_now_ms(gateway) - round(seconds * 1000)
    run_sql(gateway.database_url, f"UPDATE jobs SET run_at_ms = {due} WHERE lease_owner IS NULL")


def age_waiting_callbacks(gateway: Gateway, seconds: float) -> None:
    """Every callback no dispatcher holds, and its destination's head, becomes due ``seconds`` ago."""
    due = gateway_now_ms(gateway) - round(seconds * 1000)
    run_sql(
        gateway.database_url,
        f"UPDATE callbacks SET next_attempt_at_ms = {due} WHERE state = 'pending' AND lease_until_ms IS NULL",
    )
    run_sql(gateway.database_url, f"UPDATE callback_destinations SET first_at_ms = {due} WHERE first_at_ms IS NOT NULL")


def figures_once(
    gateway: Gateway,
    *,
    shedding: bool | None = None,
    processes_shedding: int | None = None,
    age_between: tuple[float, float] | None = None,
    logged: str | None = None,
    timeout: float = 10,
) -> Samples:
    """The gateway's figures once they show what is asked (shedding or not, by so many of its processes; a
    signal in a range of seconds) and its log holds ``logged``: the sampler reads the signal a few times a
    second."""
    deadline = time.monotonic() + timeout
    while True:
        samples = scrape(gateway)
        signal = value(samples, "kassa_overload_job_age_seconds")
        if (
            (shedding is None or bool(value(samples, "kassa_overload_shedding")) == shedding)
            and (processes_shedding is None or value(samples, "kassa_overload_shedding") == processes_shedding)
            and (age_between is None or age_between[0] <= signal <= age_between[1])
            and (logged is None or logged in gateway.log_text())
        ):
            return samples
        if time.monotonic() > deadline:
            ready = httpx.get(f"{gateway.ops}/readyz", timeout=10, verify=TLS).text
            raise AssertionError(f"not seen within {timeout} s: signal {signal} s; {ready}")
        time.sleep(0.05)
