"""Signing in to the console: passwords, one-time codes, lockout, sessions, and who is refused."""

from __future__ import annotations

import html
import re
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pyotp
import pytest

from tests.support.console import (
    ConsoleClient,
    Login,
    SignIn,
    csrf_of,
    hash_cost_of,
    new_address,
    new_operator,
    sign_in_together,
)
from tests.support.gateway import TEST_PASSWORD_COST, TLS, Gateway, Merchant


def test_an_admin_signs_in_with_password_and_one_time_code_and_lands_on_the_overview(
    shared_gateway: Gateway, operator_of: Callable[..., Login]
) -> None:
    client = ConsoleClient(shared_gateway)
    answer = client.sign_in(operator_of("admin"))
    assert answer.status_code == 303 and answer.headers["location"] == "/"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert client.get("/").status_code == 200


def test_an_admin_without_the_one_time_code_is_refused(
    shared_gateway: Gateway, operator_of: Callable[..., Login]
) -> None:
    admin = operator_of("admin")
    answer = ConsoleClient(shared_gateway).sign_in(admin, code="")
    assert answer.status_code == 401
    assert "Wrong email, password or code" in answer.text


def test_a_one_time_code_is_accepted_once(shared_gateway: Gateway, operator_of: Callable[..., Login]) -> None:
    admin = operator_of("admin")
    code = admin.code()
    assert ConsoleClient(shared_gateway).sign_in(admin, code=code).status_code == 303
    assert ConsoleClient(shared_gateway).sign_in(admin, code=code).status_code == 401


def test_a_viewer_signs_in_with_a_password_alone(shared_gateway: Gateway, operator_of: Callable[..., Login]) -> None:
    assert ConsoleClient(shared_gateway).sign_in(operator_of("viewer")).status_code == 303


def test_a_hash_of_another_cost_is_made_again_at_the_cost_set_when_its_operator_next_signs_in(
    shared_gateway: Gateway,
) -> None:
    viewer = new_operator(shared_gateway, "viewer", cost="m=19456,t=2,p=1")
    wrong = ConsoleClient(shared_gateway).sign_in(viewer, password="not the password at all")
    assert wrong.status_code == 401 and hash_cost_of(shared_gateway, viewer.email) == "m=19456,t=2,p=1"
    assert ConsoleClient(shared_gateway).sign_in(viewer).status_code == 303
    assert hash_cost_of(shared_gateway, viewer.email) == TEST_PASSWORD_COST
    assert ConsoleClient(shared_gateway).sign_in(viewer).status_code == 303


def _resident_mib(pid: int) -> int:
    found = re.search(r"VmRSS:\s+(\d+) kB", Path(f"/proc/{pid}/status").read_text())
    assert found is not None
    return int(found[1]) // 1024


def test_the_api_answers_while_the_console_hashes_a_new_operators_password(
    gateway_factory: Callable[..., Gateway],
) -> None:
    # A cost of 256 MiB (1 s here): the process holds the memory exactly while a hash is being made. The
    # admin's sign-in remakes their hash at that cost, before the figure at rest is read.
    gateway = gateway_factory(KASSA_PASSWORD_COST="m=262144,t=3,p=1")
    assert gateway.process is not None
    pid = gateway.process.pid
    admin = ConsoleClient(gateway)
    assert admin.sign_in(new_operator(gateway, "admin")).status_code == 303
    resting = _resident_mib(pid)

    def hashing() -> bool:
        return _resident_mib(pid) > resting + 200

    with ThreadPoolExecutor(1) as pool:
        creating = pool.submit(
            admin.post, "/operators", {"email": f"new-{uuid.uuid4().hex[:8]}@ops.example", "role": "viewer"}
        )
        deadline = time.monotonic() + 60
        while not hashing():
            assert time.monotonic() < deadline, "the hash never took its memory"
            time.sleep(0.01)
        assert httpx.get(f"{gateway.base}/openapi.json", timeout=60, verify=TLS).status_code == 200
        assert hashing() and not creating.done()  # answered while the hash was still being made
        assert creating.result().status_code == 200


def test_each_test_client_signs_in_from_an_address_no_other_has_used() -> None:
    # The address limit tests count failures per address: another test's failure from the same one
    # would be counted too.
    assert len({new_address() for _ in range(20_000)}) == 20_000


def test_five_wrong_passwords_lock_the_account_even_against_the_right_one(
    shared_gateway: Gateway, operator_of: Callable[..., Login]
) -> None:
    viewer = operator_of("viewer")
    client = ConsoleClient(shared_gateway)
    for _ in range(5):
        assert client.sign_in(viewer, password="not the password").status_code == 401
    locked = client.sign_in(viewer)
    assert locked.status_code == 401 and "Wrong email, password or code" in locked.text
    listed = {o["email"]: o for o in shared_gateway.cli("operator", "list")}
    assert listed[viewer.email]["locked_until"] is not None
    reset = shared_gateway.cli("operator", "reset-password", "--email", viewer.email)
    viewer.password = reset["password"]
    assert client.sign_in(viewer).status_code == 303


def test_merchant_credentials_do_not_sign_in(shared_gateway: Gateway, merchant: Merchant) -> None:
    client = ConsoleClient(shared_gateway)
    merchant_login = Login(merchant.login, merchant.control_key, None)
    assert client.sign_in(merchant_login).status_code == 401
    assert client.get("/").status_code == 303  # still signed out: back to the sign-in form


def test_a_sign_in_form_posted_without_its_token_is_refused(
    shared_gateway: Gateway, operator_of: Callable[..., Login]
) -> None:
    viewer = operator_of("viewer")
    client = ConsoleClient(shared_gateway)
    fields = {"email": viewer.email, "password": viewer.password, "csrf": "forged"}
    assert client.http.post("/sign-in", data=fields).status_code == 403


def test_pages_redirect_to_sign_in_without_a_session(shared_gateway: Gateway) -> None:
    answer = ConsoleClient(shared_gateway).get("/operators")
    assert answer.status_code == 303 and answer.headers["location"].startswith("/sign-in?next=/operators")


def test_sign_out_ends_the_session(shared_gateway: Gateway, operator_of: Callable[..., Login]) -> None:
    client = ConsoleClient(shared_gateway)
    assert client.sign_in(operator_of("viewer")).status_code == 303
    cookie = client.http.cookies.get("kassa_console")
    token = csrf_of(client.get("/").text)
    assert client.http.post("/sign-out", data={"csrf": token}).status_code == 303
    client.http.cookies.set("kassa_console", cookie or "")
    assert client.get("/").status_code == 303


def test_a_disabled_operator_is_signed_out_at_once(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], operator_of: Callable[..., Login]
) -> None:
    viewer = operator_of("viewer")
    client = ConsoleClient(shared_gateway)
    assert client.sign_in(viewer).status_code == 303
    shared_gateway.cli("operator", "disable", "--email", viewer.email)
    assert client.get("/").status_code == 303
    assert client.sign_in(viewer).status_code == 401


@pytest.mark.parametrize("path", ["/operators", "/audit"])
def test_a_viewer_cannot_open_admin_pages(console_as: Callable[[str], ConsoleClient], path: str) -> None:
    assert console_as("viewer").get(path).status_code == 403


def test_a_viewer_posting_an_admin_form_directly_is_refused_and_audited(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient]
) -> None:
    viewer = console_as("viewer")
    answer = viewer.post("/operators", {"email": "sneaky@ops.example", "role": "admin"})
    assert answer.status_code == 403
    emails = {o["email"] for o in shared_gateway.cli("operator", "list")}
    assert "sneaky@ops.example" not in emails
    admin = console_as("admin")
    audit = admin.get("/audit", action="operator.create").text
    assert "refused" in audit and "role" in audit


def test_an_admin_form_posted_without_its_csrf_token_is_refused(
    console_as: Callable[[str], ConsoleClient], shared_gateway: Gateway
) -> None:
    admin = console_as("admin")
    answer = admin.http.post("/operators", data={"email": "no-token@ops.example", "role": "viewer"})
    assert answer.status_code == 403
    assert "no-token@ops.example" not in {o["email"] for o in shared_gateway.cli("operator", "list")}


def test_an_admin_creates_an_operator_who_can_sign_in_and_the_audit_log_names_it(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient]
) -> None:
    admin = console_as("admin")
    created = admin.post("/operators", {"email": "Support-New@Ops.Example", "role": "support"}, from_page="/operators")
    assert created.status_code == 200 and "can sign in with this password" in created.text
    password = created.text.split("<dt>Password</dt><dd><code>")[1].split("</code>")[0]
    newcomer = Login("support-new@ops.example", password, None)
    assert ConsoleClient(shared_gateway).sign_in(newcomer).status_code == 303
    audit = admin.get("/audit", action="operator.create").text
    assert "support-new@ops.example" in audit


def _lock_out(gateway: Gateway, operator: Login) -> ConsoleClient:
    """Five wrong passwords for ``operator``, which lock it out; the client (its address) that sent them."""
    client = ConsoleClient(gateway)
    for _ in range(5):
        client.sign_in(operator, password="not the password")
    return client


def test_an_admin_resets_a_locked_out_operator_who_then_signs_in_with_the_new_password(
    shared_gateway: Gateway, console_as: Callable[[str], ConsoleClient], operator_of: Callable[..., Login]
) -> None:
    viewer = operator_of("viewer")
    client = _lock_out(shared_gateway, viewer)
    admin = console_as("admin")
    operator_id = next(o["id"] for o in shared_gateway.cli("operator", "list") if o["email"] == viewer.email)
    answer = admin.post(f"/operators/{operator_id}/reset-password", {}, from_page="/operators")
    assert answer.status_code == 200
    viewer.password = answer.text.split("<dt>Password</dt><dd><code>")[1].split("</code>")[0]
    assert client.sign_in(viewer).status_code == 303


def _operator_row(admin: ConsoleClient, login: Login) -> str:
    """The operator's row on the admin's Operators page."""
    page = admin.get("/operators").text
    return next(row for row in page.split("<tr>") if f"<td>{login.email}</td>" in row)


def test_a_hundred_wrong_passwords_at_once_lock_the_account_and_the_right_one_among_them_does_not_sign_in(
    shared_gateway: Gateway, operator_of: Callable[..., Login], console_as: Callable[[str], ConsoleClient]
) -> None:
    viewer = operator_of("viewer")
    wrong = [SignIn(viewer, password=f"not the password {n}") for n in range(100)]
    answers = sign_in_together(shared_gateway, [*wrong, SignIn(viewer)])
    assert [a.status_code for a in answers] == [401] * 101
    assert "locked until" in _operator_row(console_as("admin"), viewer)
    assert ConsoleClient(shared_gateway).sign_in(viewer).status_code == 401


def test_the_right_password_with_many_wrong_codes_and_the_right_code_at_once_does_not_sign_in(
    shared_gateway: Gateway, operator_of: Callable[..., Login], console_as: Callable[[str], ConsoleClient]
) -> None:
    admin = operator_of("admin")
    assert admin.totp_secret is not None
    totp, step = pyotp.TOTP(admin.totp_secret), int(time.time()) // 30
    valid = {totp.at((step + n) * 30) for n in range(-2, 4)}  # any code the console could take in this test
    wrong = [code for code in (f"{n * 16_661:06d}" for n in range(1, 80)) if code not in valid][:60]
    answers = sign_in_together(shared_gateway, [*(SignIn(admin, code=code) for code in wrong), SignIn(admin)])
    assert [a.status_code for a in answers] == [401] * 61
    assert "locked until" in _operator_row(console_as("admin"), admin)


def test_one_code_used_five_times_at_once_signs_in_once(
    shared_gateway: Gateway, operator_of: Callable[..., Login]
) -> None:
    admin = operator_of("admin")
    code = admin.code()
    answers = sign_in_together(shared_gateway, [SignIn(admin, code=code) for _ in range(5)])
    assert sorted(a.status_code for a in answers) == [303, 401, 401, 401, 401]


def _as_seen(answer: httpx.Response) -> tuple[int, list[tuple[str, str]], str]:
    """The answer but for what differs by design in every one: its date, and the sign-in form's own CSRF
    secret (in its cookie) and token (in the page)."""
    headers = [
        (name, re.sub(r"kassa_console_pre=[^;]*", "kassa_console_pre=", value))
        for name, value in answer.headers.multi_items()
        if name != "date"
    ]
    return answer.status_code, headers, re.sub(r'name="csrf" value="[^"]*"', 'name="csrf"', answer.text)


def test_a_locked_account_an_unknown_email_and_a_wrong_password_get_the_same_answer(
    shared_gateway: Gateway, operator_of: Callable[..., Login]
) -> None:
    viewer = operator_of("viewer")
    client = ConsoleClient(shared_gateway)
    wrong = client.sign_in(viewer, password="not the password")
    for _ in range(4):
        client.sign_in(viewer, password="not the password")
    locked = client.sign_in(viewer)
    unknown = client.sign_in(Login(f"nobody-{uuid.uuid4().hex[:8]}@ops.example", viewer.password, None))
    assert locked.status_code == 401
    assert _as_seen(locked) == _as_seen(unknown) == _as_seen(wrong)


def test_a_lockout_is_shown_to_admins_and_audited_and_an_admin_unlocks_it(
    shared_gateway: Gateway, operator_of: Callable[..., Login], console_as: Callable[[str], ConsoleClient]
) -> None:
    viewer = operator_of("viewer")
    client = _lock_out(shared_gateway, viewer)
    admin = console_as("admin")
    row = _operator_row(admin, viewer)
    assert "locked until" in row and "<td>5</td>" in row  # its failed sign-ins
    locks = html.unescape(admin.get("/audit", action="operator.lock", actor=viewer.email).text)
    assert '"failed_signins":5' in locks and client.address in locks
    unlock = re.search(r'action="(/operators/\d+/unlock)"', row)
    assert unlock is not None
    assert admin.post(unlock[1], {}, from_page="/operators").status_code == 303
    assert "active" in _operator_row(admin, viewer)
    unlocks = html.unescape(admin.get("/audit", action="operator.unlock").text)
    assert viewer.email in unlocks and '"failed_signins":5' in unlocks
    assert client.sign_in(viewer).status_code == 303


def test_failed_sign_ins_from_one_address_past_its_limit_are_refused_whichever_account_and_audited(
    shared_gateway: Gateway, operator_of: Callable[..., Login], console_as: Callable[[str], ConsoleClient]
) -> None:
    address, stranger = new_address(), Login(f"nobody-{uuid.uuid4().hex[:8]}@ops.example", "guess guess guess", None)
    answers = sign_in_together(shared_gateway, [SignIn(stranger, address=address) for _ in range(25)])
    assert sorted(a.status_code for a in answers) == [401] * 20 + [429] * 5
    refused = next(a for a in answers if a.status_code == 429)
    assert int(refused.headers["retry-after"]) > 0 and "Too many failed sign-ins from your address" in refused.text
    assert ConsoleClient(shared_gateway, address=address).sign_in(operator_of("viewer")).status_code == 429
    audit = console_as("admin").get("/audit", action="operator.sign-in", actor=stranger.email).text
    assert audit.count("address limit") == 1 and address in audit  # once, not for every refusal


def test_a_successful_sign_in_gives_its_attempt_back_to_the_address(
    shared_gateway: Gateway, operator_of: Callable[..., Login]
) -> None:
    address, stranger = new_address(), Login(f"nobody-{uuid.uuid4().hex[:8]}@ops.example", "guess guess guess", None)
    answers = sign_in_together(shared_gateway, [SignIn(stranger, address=address) for _ in range(19)])
    assert [a.status_code for a in answers] == [401] * 19
    client = ConsoleClient(shared_gateway, address=address)
    assert client.sign_in(operator_of("viewer")).status_code == 303
    assert client.sign_in(stranger).status_code == 401  # the twentieth failure
    assert client.sign_in(stranger).status_code == 429
