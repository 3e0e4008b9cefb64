"""A merchant's checkout written as merchant code is (CONTRACT §18): a small web server in the test process
that serves a checkout page with exactly §18's Content-Security-Policy, gets ephemeral tickets, makes the
v4 sale with the token its page hands it, answers its page's status polls from v4 status, and takes the
signed return to ``redirect_url``. The page is at ``localhost``, the gateway at ``127.0.0.1``: two sites."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from tests.support.gateway import Merchant, free_port, sha1
from tests.support.hosted_fields import ephemeral_ticket, sale, status, tokenize
from tests.support.receiver import serving_on_a_thread

PAGES = Path(__file__).parent.parent / "pages" / "merchant_checkout"
SDK_COPY = resources.files("kassa.pages") / "static" / "hosted-fields.js"


def policy(sdk_origin: str) -> str:
    """CONTRACT §18's policy, word for word, with the SDK's origin."""
    return (
        f"default-src 'none'; script-src 'self' {sdk_origin}; style-src 'self'; frame-src {sdk_origin}; "
        f"connect-src 'self' {sdk_origin}; img-src 'self' data:"
    )


@dataclass
class Return:
    fields: dict[str, str]
    signed: bool  # control = sha1(status + orderid + merchant_order + control key)


@dataclass
class Checkout:
    merchant: Merchant
    port: int = field(default_factory=free_port)
    sales: list[dict[str, object]] = field(default_factory=list)  # the v4 sale answers, in order
    returns: list[Return] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def origin(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def sdk_url(self) -> str:
        return f"{self.merchant.gateway.base}/hosted-fields/v1/hosted-fields.js"

    def url(self, query: str = "") -> str:
        return f"{self.origin}/{query}"

    def page(self, name: str, theme: str, *, own_sdk: bool = False) -> bytes:
        """``own_sdk``: the page loads a copy of the SDK from the shop's own origin, as it must not."""
        sdk = f"{self.origin}/hosted-fields.js" if own_sdk else self.sdk_url
        text = (PAGES / name).read_text().replace("SDK_URL", sdk).replace("THEME", theme)
        return text.replace("ENDPOINT_ID", str(self.merchant.endpoint_id)).encode()

    def ticket(self, spent: bool) -> str:
        found = ephemeral_ticket(self.merchant)
        if spent:  # another tab of the shop used it already
            assert tokenize(self.merchant, found).status_code == 200
        return found

    def pay(self, asked: dict[str, object]) -> dict[str, object]:
        browser = {str(k): str(v) for k, v in dict(asked.get("browser") or {}).items()}  # type: ignore[call-overload]
        answer = sale(
            self.merchant, str(asked["token"]), card_printed_name=str(asked["name"]),
            redirect_url=f"{self.origin}/return", **browser,
        )  # fmt: skip
        with self.lock:
            self.sales.append(answer.json())
        if answer.status_code != 200:
            return {"error": answer.json()["error-message"]}
        return {"orderId": answer.json()["paynet-order-id"]}

    def status(self, order_id: str) -> dict[str, object]:
        found = status(self.merchant, order_id)
        answer: dict[str, object] = {"status": found["status"]}
        if "redirect-to" in found:
            answer["redirectTo"] = found["redirect-to"]
        return answer

    def returned(self, fields: dict[str, str]) -> Return:
        m = self.merchant
        control = sha1(fields.get("status"), fields.get("orderid"), fields.get("merchant_order"), m.control_key)
        found = Return(fields, fields.get("control") == control)
        with self.lock:
            self.returns.append(found)
        return found


def _handler(checkout: Checkout) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            query = dict(parse_qsl(parts.query))
            if parts.path == "/":
                own = query.get("sdk") == "own"
                self._send(checkout.page("index.html", query.get("theme", "light"), own_sdk=own), "text/html")
            elif parts.path == "/hosted-fields.js":
                self._send(SDK_COPY.read_bytes(), "text/javascript")
            elif parts.path in ("/shop.js", "/shop.css"):
                kind = "text/javascript" if parts.path.endswith(".js") else "text/css"
                self._send((PAGES / parts.path[1:]).read_bytes(), kind)
            elif parts.path == "/status":
                self._json(checkout.status(query["order"]))
            else:
                self.send_error(404)

        def do_POST(self) -> None:
            parts = urlsplit(self.path)
            body = self.rfile.read(int(self.headers.get("content-length", "0")))
            if parts.path == "/ticket":
                self._json({"ticket": checkout.ticket(spent="spent=1" in parts.query)})
            elif parts.path == "/pay":
                self._json(checkout.pay(json.loads(body)))
            elif parts.path == "/return":
                found = checkout.returned(dict(parse_qsl(body.decode(), keep_blank_values=True)))
                verdict = "signed" if found.signed else "NOT SIGNED"
                shown = f"<p id='returned'>{found.fields.get('status')} ({verdict})</p>"
                self._send(f"<!doctype html><title>Shop</title>{shown}".encode(), "text/html")
            else:
                self.send_error(404)

        def _json(self, value: object) -> None:
            self._send(json.dumps(value).encode(), "application/json")

        def _send(self, body: bytes, kind: str) -> None:
            self.send_response(200)
            self.send_header("content-type", f"{kind}; charset=utf-8")
            self.send_header("content-security-policy", policy(checkout.merchant.gateway.base.split("/paynet")[0]))
            self.send_header("cache-control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_args: object) -> None:
            pass

    return Handler


@contextmanager
def serving(checkout: Checkout) -> Iterator[Checkout]:
    with serving_on_a_thread(ThreadingHTTPServer(("127.0.0.1", checkout.port), _handler(checkout))):
        yield checkout
