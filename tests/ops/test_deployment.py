"""The recipe of docs/deployment.md, run: two API-only processes (``kassa serve --workers 0``) and two
``kassa worker`` processes on one fresh PostgreSQL, behind Debian's nginx configured by the recipe's own
file (``docs/deploy/nginx.conf``), TLS ending at nginx. Merchants and customers address the gateway as
``https://localhost:PORT`` and nothing else; an attacker talks to an API process directly."""

from __future__ import annotations

import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin

import httpx
import pytest

from tests.engine.test_recovery import captured_once
from tests.support.databases import POSTGRES_ADMIN_URL, fresh_postgres, run_script, run_sql
from tests.support.gateway import JSON_ACCEPT, KASSA, Gateway, Merchant, cli_run, free_port, new_merchant
from tests.support.oauth import key_pair, register_key, sign
from tests.support.operations import approved_order
from tests.support.proxy import SERVER_NAME, ProxiedGateway, Proxy, nginx_in_front_of
from tests.support.receiver import Receiver, running

pytestmark = pytest.mark.backends("postgresql")

RECIPE_SQL = Path(__file__).resolve().parents[2] / "docs" / "deploy" / "postgresql.sql"
# nginx connects to the API processes from 127.0.0.1, the one proxy they trust; the attacker's own
# connections come from another address of the machine.
ROLE_ENV = {"KASSA_TRUSTED_PROXIES": "127.0.0.1", "KASSA_PUBLIC_URL": ""}
ATTACKER = "127.0.0.3"


@dataclass
class Deployment:
    apis: list[Gateway]
    proxy: Proxy
    seen: ProxiedGateway  # the gateway as clients see it: through nginx

    def merchant(self) -> Merchant:
        return new_merchant(self.seen, f"d-{uuid.uuid4().hex[:10]}")


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    data_dir = tmp_path_factory.mktemp("deployment")
    with ExitStack() as stack:
        url = stack.enter_context(fresh_postgres())
        upgraded = cli_run(Gateway(url, data_dir, extra_env=ROLE_ENV), "db", "upgrade")  # once, before the processes
        assert upgraded.returncode == 0, upgraded.stderr
        run_script(url, RECIPE_SQL.read_text())
        apis = []
        for _ in range(2):
            apis.append(Gateway(url, data_dir, extra_env=ROLE_ENV).start("--workers", "0"))
            stack.callback(apis[-1].stop)
        for n in range(2):
            stack.callback(_stop, _worker(apis[0], n))
        proxy = stack.enter_context(nginx_in_front_of([f"127.0.0.1:{api.port}" for api in apis]))
        yield Deployment(apis, proxy, ProxiedGateway.of(apis[0], proxy))


def _worker(gateway: Gateway, n: int) -> subprocess.Popen[bytes]:
    log = (gateway.data_dir / f"worker-{n}.log").open("ab")  # read when a test fails
    return subprocess.Popen([KASSA, "worker", "--workers", "2"], env=gateway.env, stdout=log, stderr=log)


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(10)


def attacker() -> httpx.Client:
    """A client of the API processes themselves, from an address of the machine that is not nginx's."""
    return httpx.Client(transport=httpx.HTTPTransport(local_address=ATTACKER), timeout=30)


# --- (a) OAuth: the base string is the https URL the client addressed through nginx ----------------------


def test_a_v4_request_signed_for_the_proxys_https_url_is_accepted(deployment: Deployment) -> None:
    merchant = deployment.merchant()
    register_key(deployment.seen, merchant.login, key_pair()[1])
    orderid = approved_order(merchant, "v4-through-proxy")
    address = f"{deployment.seen.base}/api/v4/create-card-ref/{merchant.endpoint_id}"
    assert address.startswith(f"https://{SERVER_NAME}:")
    fields = {"client_orderid": "v4-through-proxy", "orderid": orderid}
    headers, body = sign(address, fields, login=merchant.login, private_key_pem=key_pair()[0])
    answer = httpx.post(address, content=body, headers={**JSON_ACCEPT, **headers}, verify=deployment.proxy.tls)
    assert (answer.status_code, answer.json()["status"]) == (200, "approved"), answer.text


def test_a_v4_request_over_http2_is_signed_for_the_same_address(deployment: Deployment) -> None:
    """HTTP/2 clients name the host in ``:authority``, not in a Host header: nginx forwards it all the same."""
    merchant = deployment.merchant()
    register_key(deployment.seen, merchant.login, key_pair()[1])
    orderid = approved_order(merchant, "v4-http2")
    address = f"{deployment.seen.base}/api/v4/create-card-ref/{merchant.endpoint_id}"
    signed, body = sign(address, {"client_orderid": "v4-http2", "orderid": orderid}, login=merchant.login,
                        private_key_pem=key_pair()[0])  # fmt: skip
    headers = [part for name, value in {**JSON_ACCEPT, **signed}.items() for part in ("--header", f"{name}: {value}")]
    curl = ["curl", "--silent", "--http2", "--cacert", str(deployment.proxy.certificate), "--data-binary", body]
    done = subprocess.run(
        [*curl, *headers, "--write-out", "\n%{http_version}", address], capture_output=True, text=True, check=True
    )
    answer, version = done.stdout.rsplit("\n", 1)
    assert (version, json.loads(answer)["status"]) == ("2", "approved"), done.stdout


# --- (b) hosted pages: every link a customer follows is the proxy's https address --------------------------


class _Forms(HTMLParser):
    """The forms of a page: (id, action, hidden and filled fields) and the text of ``#code-hint``."""

    def __init__(self) -> None:
        super().__init__()
        self.forms: dict[str, tuple[str, dict[str, str]]] = {}
        self.hint = ""
        self._current = ""
        self._in_hint = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._current = values.get("id", "")
            self.forms[self._current] = (values["action"], {})
        elif tag == "input" and values.get("type") == "hidden":
            self.forms[self._current][1][values["name"]] = values.get("value", "")
        self._in_hint = values.get("id") == "code-hint"

    def handle_endtag(self, tag: str) -> None:
        self._in_hint = False

    def handle_data(self, data: str) -> None:
        if self._in_hint:
            self.hint += data


def _page(html: str) -> _Forms:
    parsed = _Forms()
    parsed.feed(html)
    return parsed


def _form_fields(merchant: Merchant, client_orderid: str, **extra: str) -> dict[str, str]:
    """A signed sale-form body: a sale's fields without the card, which the customer gives on the page."""
    data = merchant.sale_fields(client_orderid, **extra)
    for card_field in ("credit_card_number", "card_printed_name", "expire_month", "expire_year", "cvv2"):
        del data[card_field]
    return data


def _next_step(client: httpx.Client, checkout: str, form_id: str) -> tuple[str, dict[str, str]]:
    """The checkout page once it shows ``form_id`` (it refreshes while the payment is processed)."""
    deadline = time.monotonic() + 20
    while True:
        forms = _page(client.get(checkout).text).forms
        if form_id in forms:
            action, fields = forms[form_id]
            return urljoin(checkout, action), fields
        assert time.monotonic() < deadline, f"the checkout page never showed #{form_id}"
        time.sleep(0.1)


def test_a_customer_pays_on_the_hosted_form_and_every_link_is_the_proxys(deployment: Deployment) -> None:
    merchant, origin = deployment.merchant(), deployment.proxy.origin
    shop_return = "http://127.0.0.1:9/return"  # never fetched here: the final page names it only
    answer = merchant.gateway.post(
        f"/api/v2/sale-form/{merchant.endpoint_id}", _form_fields(merchant, "hosted-proxy", redirect_url=shop_return)
    )
    form_url = answer.json()["redirect-url"]
    links = [form_url]
    with httpx.Client(verify=deployment.proxy.tls, timeout=30) as browser:
        action, _ = _page(browser.get(form_url).text).forms["card-form"]
        card = {"cc-number": "4111 1111 1111 1111", "cc-name": "Jane Doe", "cc-exp": "12/30", "cc-csc": "321"}
        taken = browser.post(urljoin(form_url, action), data=card)
        assert taken.status_code == 303, taken.text
        checkout = taken.headers["location"]
        acs, creq = _next_step(browser, checkout, "next")  # to the issuer's challenge
        challenge = _page(browser.post(acs, data=creq).text)
        answer_url, hidden = challenge.forms["challenge"]
        back, cres = _page(browser.post(answer_url, data={**hidden, "code": challenge.hint}).text).forms["next"]
        returned = browser.post(back, data=cres)
        assert returned.status_code == 303, returned.text
        links += [urljoin(form_url, action), checkout, acs, answer_url, back, returned.headers["location"]]
        shop, signed = _next_step(browser, checkout, "next")  # the final redirect, to the shop
    assert all(link.startswith(f"{origin}/paynet/") for link in links), links
    assert (shop, signed["status"]) == (shop_return, "approved")
    logged = deployment.proxy.access_log()
    for token in (form_url.rsplit("/", 1)[1], checkout.rsplit("/", 1)[1]):
        assert token not in logged  # nginx logs a page's path up to its token
    assert '"path":"/paynet/form/-"' in logged and '"path":"/paynet/checkout/-"' in logged


# --- (c) sales through the proxy: each processed once by the workers, each callback delivered once ---------

SALES = 12


def test_sales_through_the_proxy_are_processed_once_and_called_back_once(deployment: Deployment) -> None:
    merchant = deployment.merchant()
    with running(Receiver(free_port())) as receiver:
        orderids = [
            merchant.sale(f"c-{n}", server_callback_url=receiver.url).json()["paynet-order-id"] for n in range(SALES)
        ]
        assert [merchant.wait_final(orderid, timeout=30)["status"] for orderid in orderids] == ["approved"] * SALES
        _wait_delivered(deployment, orderids)
        called_back = sorted(r.query["orderid"] for r in receiver.received)
    assert called_back == sorted(orderids)
    ids = ",".join(orderids)
    per_order = f"SELECT COUNT(*) FROM transactions WHERE order_id IN ({ids}) GROUP BY order_id"
    assert run_sql(deployment.seen.database_url, per_order) == [(1,)] * SALES
    attempts = (
        f"SELECT COUNT(*) FROM callback_attempts a JOIN callbacks c ON c.id = a.callback_id WHERE c.order_id IN ({ids})"
    )
    assert run_sql(deployment.seen.database_url, attempts) == [(SALES,)]
    assert captured_once(merchant, f"{1042 * SALES / 100:.2f}")  # an outcome recorded twice would post twice
    requests_per_api = [api.log_text().count('"http_status"') for api in deployment.apis]
    assert all(requests_per_api), f"nginx spreads over both API processes: {requests_per_api}"


def _wait_delivered(deployment: Deployment, orderids: list[str]) -> None:
    query = f"SELECT COUNT(*) FROM callbacks WHERE state = 'delivered' AND order_id IN ({','.join(orderids)})"
    deadline = time.monotonic() + 20
    while run_sql(deployment.seen.database_url, query) != [(len(orderids),)]:
        assert time.monotonic() < deadline, "callbacks not all delivered"
        time.sleep(0.05)


# --- (d) the same forwarded headers sent straight to an API process are not believed ----------------------


def test_forged_forwarded_headers_sent_straight_to_an_api_process_are_not_believed(deployment: Deployment) -> None:
    merchant = deployment.merchant()
    register_key(deployment.seen, merchant.login, key_pair()[1])
    orderid = approved_order(merchant, "forged")
    api = deployment.apis[0]
    public = f"{deployment.seen.base}/api/v4/create-card-ref/{merchant.endpoint_id}"
    fields = {"client_orderid": "forged", "orderid": orderid}
    headers, body = sign(public, fields, login=merchant.login, private_key_pem=key_pair()[0])
    forged = {"X-Forwarded-Proto": "https", "X-Forwarded-Host": f"{SERVER_NAME}:{deployment.proxy.port}"}
    with attacker() as client:
        refused = client.post(
            f"{api.base}/api/v4/create-card-ref/{merchant.endpoint_id}",
            content=body,
            headers={**JSON_ACCEPT, **headers, **forged},
        )
        assert refused.status_code == 401, refused.text
        assert refused.json()["error-code"] == "2"

        answer = client.post(
            f"{api.base}/api/v2/sale-form/{merchant.endpoint_id}",
            data=_form_fields(merchant, "forged-form"),
            headers={**JSON_ACCEPT, **forged},
        )
    assert answer.json()["redirect-url"].startswith(f"http://127.0.0.1:{api.port}/paynet/form/"), answer.text
    # The very request the attacker replayed, sent as signed through nginx, is accepted: only the path differed.
    through = httpx.post(public, content=body, headers={**JSON_ACCEPT, **headers}, verify=deployment.proxy.tls)
    assert (through.status_code, through.json()["status"]) == (200, "approved"), through.text


def test_forwarding_headers_a_client_sends_through_nginx_are_replaced(deployment: Deployment) -> None:
    merchant, seen = deployment.merchant(), deployment.seen
    forged = {**JSON_ACCEPT, "X-Forwarded-For": "203.0.113.7", "X-Forwarded-Host": "evil.example"}
    form = seen.post(f"/api/v2/sale-form/{merchant.endpoint_id}", _form_fields(merchant, "xff-form"), forged)
    assert form.json()["redirect-url"].startswith(f"{deployment.proxy.origin}/paynet/form/"), form.text
    seen.cli("merchant", "update", "--login", merchant.login, "--allow-network", "203.0.113.0/24")
    refused = seen.post(f"/api/v2/sale/{merchant.endpoint_id}", merchant.sale_fields("xff-1"), forged)
    assert (refused.status_code, refused.json()["error-code"]) == (400, "3"), refused.text
    seen.cli("merchant", "update", "--login", merchant.login, "--allow-network", "127.0.0.1/32")  # the real one
    accepted = seen.post(f"/api/v2/sale/{merchant.endpoint_id}", merchant.sale_fields("xff-2"), forged)
    assert accepted.status_code == 200, accepted.text


def test_nginx_answers_only_for_the_gateways_name(deployment: Deployment) -> None:
    other = httpx.get(
        f"{deployment.proxy.origin}/paynet/openapi.json",
        headers={"Host": "elsewhere.example"},
        verify=deployment.proxy.tls,
    )
    assert other.status_code == 421
    own = httpx.get(f"{deployment.proxy.origin}/paynet/openapi.json", verify=deployment.proxy.tls)
    assert own.status_code == 200
    assert own.headers["strict-transport-security"].startswith("max-age=")


# --- the recipe's PostgreSQL settings --------------------------------------------------------------------

RECIPE_CONF = RECIPE_SQL.with_name("postgresql.conf")


def _recipe_settings() -> dict[str, str]:
    settings = {}
    for line in RECIPE_CONF.read_text().splitlines():
        name, _, value = line.partition("#")[0].partition("=")
        if name.strip():
            settings[name.strip()] = value.strip()
    return settings


def test_the_recipes_postgresql_settings_exist_and_take_their_values() -> None:
    settings = _recipe_settings()
    contexts = dict(run_sql(POSTGRES_ADMIN_URL, "SELECT name, context FROM pg_settings"))
    assert set(settings) <= set(contexts), sorted(set(settings) - set(contexts))
    for name, value in settings.items():
        if contexts[name] in ("user", "superuser"):  # the others only a restart or a reload sets
            run_sql(POSTGRES_ADMIN_URL, f"SELECT set_config('{name}', '{value}', true)")


# --- last: it stops an API process ---------------------------------------------------------------------


def test_with_an_api_process_stopped_nginx_sends_every_request_to_the_other(deployment: Deployment) -> None:
    merchant = deployment.merchant()
    before = [merchant.sale(f"stop-{n}").status_code for n in range(4)]  # nginx holds connections to both
    deployment.apis[0].stop()
    after = [merchant.sale(f"stopped-{n}") for n in range(8)]
    assert before == [200] * 4
    assert [answer.status_code for answer in after] == [200] * 8, [answer.text for answer in after]
    finals = [merchant.wait_final(answer.json()["paynet-order-id"])["status"] for answer in after]
    assert finals == ["approved"] * 8
