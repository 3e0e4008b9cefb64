"""A throwaway Kassa sandbox for a test session: ``kassa serve`` in a subprocess with the test clock on,
SQLite in a temporary directory, a free port, and one merchant (made with the ``kassa`` command, as
operators make one) with a sandbox endpoint, an RSA key pair and a sandbox balance for payouts."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from kassa_client.callbacks import verify_callback
from kassa_client.client import AsyncKassa, Kassa
from kassa_client.testing.browser import HostedBrowser

DAY = 86400
SETTLEMENT_CUTOFF = "00:00"  # what the sandbox runs with: settlement is the next midnight, UTC
AUTHORIZATION_TTL = 7 * DAY
RECONCILE_DELAY = 60


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_executable(configured: str | None = None) -> str:
    """The ``kassa`` command: ``configured`` (the ini option), else ``$KASSA_EXECUTABLE``, else ``kassa`` on
    PATH, else beside the running Python (a virtual environment's ``bin``)."""
    named = configured or os.environ.get("KASSA_EXECUTABLE") or "kassa"
    found = shutil.which(named) or shutil.which(named, path=str(Path(sys.executable).parent))
    if found is None:
        raise RuntimeError(f"no Kassa executable {named!r}: install kassa or set KASSA_EXECUTABLE")
    return found


@dataclass
class Callback:
    path: str
    fields: dict[str, str]


class CallbackReceiver:
    """A small HTTP server in the test process that takes the gateway's callbacks (any path, GET or POST)
    and answers 200."""

    def __init__(self) -> None:
        self.received: list[Callback] = []
        self.changed = threading.Condition()
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._take(urlsplit(self.path).query)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0"))).decode()
                self._take(body)

            def _take(self, encoded: str) -> None:
                found = Callback(urlsplit(self.path).path, dict(parse_qsl(encoded, keep_blank_values=True)))
                with receiver.changed:
                    receiver.received.append(found)
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("content-length", "2")
                self.end_headers()
                self.wfile.write(b"OK")

            def log_message(self, *_args: object) -> None:
                pass

        return Handler

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@dataclass
class SandboxGateway:
    """``kassa serve`` on SQLite in ``directory``, started by ``start()``; ``merchant()`` makes merchants."""

    directory: Path
    executable: str
    port: int = field(default_factory=free_port)
    process: subprocess.Popen[bytes] | None = None
    env: dict[str, str] = field(init=False)
    offset: float = 0.0  # seconds the test clock is ahead of real time
    # One connection pool for the session's sync clients: an httpx client costs tens of ms to make.
    http: httpx.Client = field(default_factory=lambda: httpx.Client(timeout=30))

    def clock(self) -> float:
        """The gateway's time, in epoch seconds: what the sandbox's clients sign OAuth requests with, since
        a timestamp more than 300 s off the gateway's clock is refused."""
        return time.time() + self.offset

    def __post_init__(self) -> None:
        self.env = {name: value for name, value in os.environ.items() if not name.startswith("KASSA_")}
        self.env.update(
            KASSA_DATA_DIR=str(self.directory),
            KASSA_DATABASE_URL=f"sqlite:///{self.directory / 'kassa.db'}",
            KASSA_VAULT_KEY=base64.b64encode(secrets.token_bytes(32)).decode(),
            KASSA_TEST_CLOCK="1",
            KASSA_POLL_INTERVAL="0.05",  # jobs and callbacks start within 50 ms, not the default 200
            KASSA_ENDPOINT_CACHE_SECONDS="0",
            KASSA_ADDRESS_RATE="0",  # every test speaks from 127.0.0.1
            KASSA_OVERLOAD_JOB_AGE="0",  # a moved clock makes jobs look late: no load shedding
            KASSA_OVERLOAD_CALLBACK_AGE="0",  # and callbacks too
            KASSA_SETTLEMENT_CUTOFF=SETTLEMENT_CUTOFF,
        )

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/paynet"

    def cli(self, *args: str) -> Any:
        done = subprocess.run(
            [self.executable, *args, "--json"], env=self.env, capture_output=True, text=True, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"kassa {' '.join(args)} failed: {done.stderr[-2000:]}")
        return json.loads(done.stdout)

    def migrate(self) -> None:
        """Creates the database's schema (``kassa db upgrade``): before ``start`` and ``merchant``."""
        subprocess.run([self.executable, "db", "upgrade"], env=self.env, check=True, capture_output=True)

    def start(self, timeout: float = 60.0) -> SandboxGateway:
        log = (self.directory / "gateway.log").open("ab")
        for _ in range(3):  # another process may take the port between its pick and the bind
            self.process = subprocess.Popen(
                [self.executable, "serve", "--host", "127.0.0.1", "--port", str(self.port)],
                env=self.env, stdout=log, stderr=log,
            )  # fmt: skip
            if self._answers(timeout):
                return self
            self.port = free_port()
        raise RuntimeError(f"the Kassa sandbox did not start: {self.log()[-2000:]}")

    def _answers(self, timeout: float) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if "address already in use" in self.log().lower():
                    return False
                raise RuntimeError(f"the Kassa sandbox exited: {self.log()[-2000:]}")
            try:
                httpx.get(f"{self.base_url}/openapi.json", timeout=1)
                return True
            except httpx.TransportError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the Kassa sandbox did not answer")

    def log(self) -> str:
        path = self.directory / "gateway.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def stop(self) -> None:
        self.http.close()
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def advance(self, seconds: float) -> int:
        """Moves the gateway's clock forward; returns its new time in epoch ms. Expiry and settlement now
        due are done on return; due jobs, recurring charges and callbacks have started."""
        answer = httpx.post(f"{self.base_url}/_test/clock", data={"advance": str(seconds)}, timeout=60)
        answer.raise_for_status()
        now_ms = int(answer.json()["now_ms"])
        self.offset = now_ms / 1000 - time.time()
        return now_ms

    def merchant(self, login: str | None = None, currency: str = "USD", balance: str = "1000000") -> Merchant:
        """A new merchant (classic format allowed, so that clients may speak either format), a sandbox
        endpoint in ``currency``, an RSA key pair registered for v4, and a sandbox balance for payouts."""
        login = login or f"merchant-{uuid.uuid4().hex[:10]}"
        created = self.cli("merchant", "create", "--login", login, "--classic")
        private, public = _key_pair()
        pem = self.directory / f"{login}.pub.pem"
        pem.write_text(public)
        with ThreadPoolExecutor(3) as pool:  # each command is a process start: the three at once
            endpoint = pool.submit(self.cli, "endpoint", "create", "--merchant", login, "--currency", currency)
            key = pool.submit(self.cli, "key", "add", "--merchant", login, "--mode", "sandbox", "--pem", str(pem))
            credit = pool.submit(
                self.cli, "balance", "credit", "--merchant", login, "--currency", currency, "--amount", balance,
                "--reason", "test sandbox",
            )  # fmt: skip
            key.result(), credit.result()
            endpoint_id = int(endpoint.result()["id"])
        return Merchant(login, created["control_key"], endpoint_id, currency, private, public)


@dataclass(frozen=True)
class Merchant:
    login: str
    control_key: str
    endpoint_id: int
    currency: str
    private_key_pem: str
    public_key_pem: str


def _key_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    public = key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    return private.decode(), public.decode()


class Sandbox:
    """What a test gets: a ready ``client`` for the session's merchant, its credentials, a ``callback_url``
    of the test's own, the test clock and the hosted pages. Order ids from ``orderid()`` are unique."""

    def __init__(self, gateway: SandboxGateway, merchant: Merchant, receiver: CallbackReceiver) -> None:
        self.gateway = gateway
        self.merchant = merchant
        self.receiver = receiver
        self.base_url = gateway.base_url
        self.login = merchant.login
        self.endpoint_id = merchant.endpoint_id
        self.control_key = merchant.control_key
        self.currency = merchant.currency
        self.private_key_pem = merchant.private_key_pem
        self.public_key_pem = merchant.public_key_pem
        self._path = f"/callbacks/{uuid.uuid4().hex}"
        self.callback_url = receiver.url + self._path
        self._clients: list[Kassa] = []
        self.client = self.new_client()

    def options(self, **overrides: Any) -> dict[str, Any]:
        """The keyword arguments of ``Kassa``/``AsyncKassa`` for this merchant, with ``overrides``."""
        return {
            "endpoint_id": self.endpoint_id, "login": self.login, "control_key": self.control_key,
            "private_key": _loaded(self.private_key_pem), "clock": self.gateway.clock, **overrides,
        }  # fmt: skip

    def new_client(self, **overrides: Any) -> Kassa:
        """Another sync client (``format="classic"``, ``max_retries=0``...), closed with the test."""
        client = Kassa(self.base_url, http_client=self.gateway.http, **self.options(**overrides))
        self._clients.append(client)
        return client

    def async_client(self, **overrides: Any) -> AsyncKassa:
        """An async client; close it with ``await client.aclose()`` or ``async with``."""
        return AsyncKassa(self.base_url, **self.options(**overrides))

    def close(self) -> None:
        for client in self._clients:
            client.close()

    @staticmethod
    def orderid(prefix: str = "order") -> str:
        """A client_orderid no other test of the session uses."""
        return f"{prefix}-{uuid.uuid4().hex[:12]}"

    # The test clock: the whole session's gateway moves, so tests assert on their own orders only.
    def advance(self, seconds: float) -> int:
        return self.gateway.advance(seconds)

    def settle(self) -> int:
        """Moves the clock past the next daily settlement cut-off (midnight UTC): approved sales and
        captures settle (a void is then refused; a return is a reversal)."""
        now_ms = self.gateway.advance(0)
        return self.gateway.advance(DAY - (now_ms // 1000) % DAY + 1)

    def expire_authorizations(self) -> int:
        """Moves the clock past the authorization lifetime (7 days): uncaptured preauths are cancelled."""
        return self.gateway.advance(AUTHORIZATION_TTL + 1)

    def reconcile(self) -> int:
        """Moves the clock past the reconciliation delay: ``unknown`` outcomes are asked again and settle."""
        return self.gateway.advance(RECONCILE_DELAY + 1)

    def run_recurring(self, days: int = 1) -> int:
        """Moves the clock ``days`` forward: recurring charges falling due run (one new order each)."""
        return self.gateway.advance(days * DAY)

    # Callbacks sent to this test's ``callback_url``.
    def callbacks(self, orderid: str | None = None) -> list[dict[str, str]]:
        """The callbacks received so far (of ``orderid``), oldest first, each verified against the control
        key: a callback with a wrong ``control`` fails the test."""
        with self.receiver.changed:
            found = [c.fields for c in self.receiver.received if c.path == self._path]
        chosen = [fields for fields in found if orderid is None or fields.get("orderid") == orderid]
        for fields in chosen:
            if not verify_callback(fields, self.control_key):
                raise AssertionError(f"a callback with a wrong control: {fields}")
        return chosen

    def wait_for_callback(
        self, orderid: str, *, status: str | None = None, type: str | None = None, timeout: float = 10.0
    ) -> dict[str, str]:
        """The first callback of ``orderid`` (with ``status`` and transaction ``type`` when given), waiting
        up to ``timeout`` seconds for it."""
        deadline = time.monotonic() + timeout
        with self.receiver.changed:
            while True:
                for fields in self.callbacks(orderid):
                    if (status is None or fields.get("status") == status) and (
                        type is None or fields.get("type") == type
                    ):
                        return fields
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(f"no callback of {orderid} (status {status}, type {type}) in {timeout} s")
                self.receiver.changed.wait(left)

    # The customer's side of hosted pages and gateway-hosted 3-D Secure.
    def browser(self, *, challenge_code: str | None = None) -> HostedBrowser:
        return HostedBrowser(self.base_url, challenge_code=challenge_code)

    def pay_hosted_form(self, redirect_url: str, **card: str) -> dict[str, str]:
        """Fills the hosted form at ``redirect_url`` (card 4111 1111 1111 1111, 12/30, CVV2 123 unless
        given: ``card_number``, ``expiry``, ``cvv2``, ``name``), passes 3-D Secure with the sandbox issuer's
        code, and returns the fields of the final redirect to the order's ``redirect_url``."""
        return self.browser().pay(redirect_url, **card)


_keys: dict[str, rsa.RSAPrivateKey] = {}


def _loaded(pem: str) -> rsa.RSAPrivateKey:
    """Keys parsed once per session: loading a PEM costs tens of milliseconds."""
    if pem not in _keys:
        key = serialization.load_pem_private_key(pem.encode(), password=None)
        assert isinstance(key, rsa.RSAPrivateKey)
        _keys[pem] = key
    return _keys[pem]


@contextmanager
def running_sandbox(directory: Path, executable: str) -> Iterator[tuple[SandboxGateway, Merchant, CallbackReceiver]]:
    """The gateway started while its merchant is made (both once the database is migrated)."""
    gateway = SandboxGateway(directory, executable)
    gateway.migrate()
    receiver = CallbackReceiver()
    try:
        with ThreadPoolExecutor(1) as pool:
            made = pool.submit(gateway.merchant)
            gateway.start()
            merchant = made.result()
        yield gateway, merchant, receiver
    finally:
        receiver.close()
        gateway.stop()


__all__ = ["CallbackReceiver", "Merchant", "Sandbox", "SandboxGateway", "running_sandbox"]
