"""Console sessions end when idle and when old, and a lockout ends on its own: on the gateway whose clock
tests move, so no test waits for either."""

from __future__ import annotations

import httpx

from tests.support.console import ConsoleClient, Login, SignIn, csrf_of, new_operator, sign_in_together
from tests.support.gateway import TLS, Gateway


def test_a_session_idle_past_its_timeout_signs_the_operator_out(clock_gateway: Gateway) -> None:
    client = ConsoleClient(clock_gateway)
    assert client.sign_in(new_operator(clock_gateway, "viewer")).status_code == 303
    clock_gateway.advance(29 * 60)
    assert client.get("/").status_code == 200  # a request within the idle time keeps it alive
    clock_gateway.advance(29 * 60)
    assert client.get("/").status_code == 200
    clock_gateway.advance(31 * 60)
    assert client.get("/").status_code == 303


def test_a_busy_session_still_ends_at_its_absolute_lifetime(clock_gateway: Gateway) -> None:
    client = ConsoleClient(clock_gateway)
    assert client.sign_in(new_operator(clock_gateway, "viewer")).status_code == 303
    for _ in range(24):  # twelve hours, a request every half hour
        assert client.get("/").status_code == 200
        clock_gateway.advance(29 * 60)
    clock_gateway.advance(60 * 60)
    assert client.get("/").status_code == 303


def test_a_lockout_ends_after_its_minutes(clock_gateway: Gateway) -> None:
    viewer = new_operator(clock_gateway, "viewer")
    client = ConsoleClient(clock_gateway)
    for _ in range(5):
        client.sign_in(viewer, password="wrong password!")
    assert client.sign_in(viewer).status_code == 401
    clock_gateway.advance(16 * 60)
    assert client.sign_in(viewer).status_code == 303


def test_an_address_past_its_sign_in_limit_is_let_in_again_as_its_allowance_refills(clock_gateway: Gateway) -> None:
    client = ConsoleClient(clock_gateway)
    stranger = Login("nobody-at-all@ops.example", "guess guess guess", None)
    answers = sign_in_together(clock_gateway, [SignIn(stranger, address=client.address) for _ in range(20)])
    assert [a.status_code for a in answers] == [401] * 20
    assert client.sign_in(stranger).status_code == 429
    clock_gateway.advance(45)  # 15 minutes for 20 attempts: one more every 45 seconds
    assert client.sign_in(stranger).status_code == 401
    assert client.sign_in(stranger).status_code == 429
    clock_gateway.advance(15 * 60)
    answers = sign_in_together(clock_gateway, [SignIn(stranger, address=client.address) for _ in range(21)])
    assert sorted(a.status_code for a in answers) == [401] * 20 + [429]


def test_the_session_cookie_is_secure_behind_an_https_proxy(shared_gateway: Gateway) -> None:
    viewer = new_operator(shared_gateway, "viewer")
    proxied = {"X-Forwarded-Proto": "https"}  # from 127.0.0.1, a trusted proxy by default
    with httpx.Client(base_url=shared_gateway.console, headers=proxied, verify=TLS) as client:
        form = client.get("/sign-in")
        pre = form.cookies.get("kassa_console_pre")  # sent back by hand: httpx keeps Secure cookies for https
        assert pre and "Secure" in form.headers["set-cookie"]
        fields = {"csrf": csrf_of(form.text), "email": viewer.email, "password": viewer.password, "next": "/"}
        answer = client.post("/sign-in", data=fields, headers={"Cookie": f"kassa_console_pre={pre}"})
    assert answer.status_code == 303
    assert "kassa_console=" in answer.headers["set-cookie"] and "Secure" in answer.headers["set-cookie"]
