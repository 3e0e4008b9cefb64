"""A real Kassa gateway in a process of its own, started as operators start it (`kassa serve`: the CLI's
``main``, in a process forked from one that imported it, ``tests.support.commands``), and a merchant's client
that signs requests the way merchant code does."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import signal
import socket
import ssl
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.support.commands import KASSA as KASSA  # where the tests of processes find it
from tests.support.commands import Spawned, run_kassa, spawn_kassa

JSON_ACCEPT = {"Accept": "application/vnd.pay+json"}
# httpx builds an SSL context, loading the CA bundle, for every client it makes (each httpx.post): 15-50 ms
# of CPU, ten times a plain-HTTP call to a gateway. Tests make thousands of calls: they share one context.
TLS = ssl.create_default_context()
TEST_VAULT_KEY = base64.b64encode(b"k" * 32).decode()
# Operators' password hashes at the least cost the gateway takes, 22 ms of CPU a hash or sign-in against
# the default's 200: the suite signs in hundreds of times, most of them refused against the decoy hash
# (101 at once in one test). tests/console/test_credentials.py holds the default.
TEST_PASSWORD_COST = "m=7168,t=5,p=1"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


LISTEN, ESTABLISHED = "0A", "01"  # TCP states as /proc/net/tcp writes them


def sockets_on(pids: list[int], port: int, state: str) -> int:
    """TCP sockets in ``state`` on local ``port`` that any of ``pids`` holds (from /proc: the processes'
    socket inodes against the kernel's TCP tables)."""
    inodes = set()
    for pid in pids:
        with contextlib.suppress(OSError):
            for descriptor in Path(f"/proc/{pid}/fd").iterdir():
                with contextlib.suppress(OSError):
                    target = os.readlink(descriptor)
                    if target.startswith("socket:["):
                        inodes.add(target[len("socket:[") : -1])
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            columns = line.split()
            local, found_state, inode = columns[1], columns[3], columns[9]
            count += found_state == state and int(local.rsplit(":", 1)[1], 16) == port and inode in inodes
    return count


def children_of(pid: int) -> list[int]:
    found = []
    with contextlib.suppress(OSError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


def _answers(url: str) -> bool:
    try:
        httpx.get(url, timeout=1, verify=TLS)
    except httpx.TransportError:
        return False
    return True


def sha1(*parts: object) -> str:
    return hashlib.sha1("".join(str(p) for p in parts).encode(), usedforsecurity=False).hexdigest()


@dataclass
class Gateway:
    database_url: str
    data_dir: Path
    port: int = field(default_factory=free_port)
    console_port: int = field(default_factory=free_port)  # every test gateway has its operator console
    ops_port: int = field(default_factory=free_port)  # and its operations listener (metrics, health)
    extra_env: dict[str, str] = field(default_factory=dict)
    process: subprocess.Popen[bytes] | Spawned | None = None
    log_path: Path = field(init=False)

    def __post_init__(self) -> None:
        self.log_path = self.data_dir / f"gateway-{self.port}.log"

    @property
    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            KASSA_DATABASE_URL=self.database_url,
            KASSA_DATA_DIR=str(self.data_dir),
            KASSA_VAULT_KEY=TEST_VAULT_KEY,
            KASSA_POLL_INTERVAL="0.05",
            KASSA_DB_THREADS="4",  # many gateways share the test server's 100 connections
            KASSA_ENDPOINT_CACHE_SECONDS="0",
            # No load shedding: test gateways share two cores with other suites and move their clocks by
            # days, so how long their jobs and callbacks wait says nothing of overload. tests/api/test_overload.py
            # sets them.
            KASSA_OVERLOAD_JOB_AGE="0",
            KASSA_OVERLOAD_CALLBACK_AGE="0",
            # No per-address limit: every test of a worker speaks to its gateway from 127.0.0.1, together far
            # over one client's 200 a second. tests/api/test_rate_limits.py sets it.
            KASSA_ADDRESS_RATE="0",
            KASSA_PASSWORD_COST=TEST_PASSWORD_COST,
            KASSA_CONSOLE=f"127.0.0.1:{self.console_port}",
            KASSA_OPS=f"127.0.0.1:{self.ops_port}",
        )
        env.update(self.extra_env)
        return env

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}/paynet"

    @property
    def console(self) -> str:
        return f"http://127.0.0.1:{self.console_port}"

    @property
    def ops(self) -> str:
        return f"http://127.0.0.1:{self.ops_port}"

    def start(self, *args: str) -> Gateway:
        """Starts the gateway and waits until it answers. Tests run in parallel, so another process may
        take the port between its pick and the gateway's bind: then the gateway starts on a new one."""
        for _ in range(3):
            if self._started(args):
                return self
            self.port, self.console_port, self.ops_port = free_port(), free_port(), free_port()
        raise RuntimeError("no free port for the gateway after three tries")

    def _started(self, args: tuple[str, ...]) -> bool:
        """True once this gateway answers on its port; False if the port was taken."""
        with self.log_path.open("ab") as log:
            self.process = spawn_kassa(["serve", "--port", str(self.port), *args], self.env, log)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                if "address already in use" in self.log_path.read_text():
                    return False
                raise RuntimeError(f"gateway exited: {self.log_path.read_text()[-2000:]}")
            # Whether the socket is this gateway's (with --processes, its children's) before asking: another
            # server may be on the port.
            pids = [self.process.pid, *children_of(self.process.pid)]
            if sockets_on(pids, self.port, LISTEN) and _answers(f"{self.base}/openapi.json"):
                return True
            time.sleep(0.05)
        self.process.kill()  # else it outlives the test session, polling a database that is dropped
        self.process.wait()
        raise RuntimeError("gateway did not start")

    def stop(self) -> None:
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def cli(self, *args: str) -> Any:
        done = run_kassa([*args, "--json"], self.env)
        if done.returncode != 0:
            raise RuntimeError(f"kassa {' '.join(args)} failed: {done.stderr}")
        return json.loads(done.stdout)

    def advance(self, seconds: float) -> int:
        """Moves the gateway's clock forward (it runs with ``KASSA_TEST_CLOCK=1``); returns its new now in
        epoch ms. Expiry and settlement now due are done on return; due jobs and callbacks have started."""
        answer = httpx.post(f"{self.base}/_test/clock", data={"advance": str(seconds)}, timeout=30, verify=TLS)
        answer.raise_for_status()
        return int(answer.json()["now_ms"])

    def log_text(self) -> str:
        return self.log_path.read_text()

    def post(self, path: str, data: dict[str, str] | str, headers: dict[str, str] | None = None) -> httpx.Response:
        return httpx.post(
            self.base + path, data=data if isinstance(data, dict) else None,
            content=data if isinstance(data, str) else None,
            headers=JSON_ACCEPT if headers is None else headers, timeout=30, verify=TLS,
        )  # fmt: skip


@dataclass
class Merchant:
    """A merchant with one endpoint, signing requests as merchant code does."""

    gateway: Gateway
    login: str
    control_key: str
    endpoint_id: int
    currency: str = "USD"

    def sale(self, client_orderid: str, *, cvv2: str = "123", amount: str = "10.42", **fields: str) -> httpx.Response:
        data = self.sale_fields(client_orderid, cvv2=cvv2, amount=amount, **fields)
        return self.gateway.post(f"/api/v2/sale/{self.endpoint_id}", data)

    def sale_fields(
        self,
        client_orderid: str,
        *,
        cvv2: str = "123",
        amount: str = "10.42",
        signed_id: int | None = None,
        **fields: str,
    ) -> dict[str, str]:
        """A signed sale body; ``signed_id`` is the endpoint or group id the control formula starts with."""
        data = {
            "client_orderid": client_orderid,
            "order_desc": "Test order",
            "amount": amount,
            "currency": self.currency,
            "email": "cardholder@example.com",
            "ipaddress": "203.0.113.7",
            "credit_card_number": "4111111111111111",
            "card_printed_name": "Jane Doe",
            "expire_month": "12",
            "expire_year": "2030",
            "cvv2": cvv2,
        }
        data.update(fields)
        signed = signed_id or self.endpoint_id
        minor = minor_units(data["amount"])
        data.setdefault("control", sha1(signed, data["client_orderid"], minor, data["email"], self.control_key))
        return data

    def status(self, *, orderid: str = "", client_orderid: str = "", **extra: str) -> httpx.Response:
        data = {"login": self.login, "client_orderid": client_orderid, "orderid": orderid, **extra}
        data = {k: v for k, v in data.items() if v}
        data["control"] = sha1(self.login, client_orderid, orderid, self.control_key)
        return self.gateway.post(f"/api/v2/status/{self.endpoint_id}", data)

    def wait_stage(
        self, orderid: str, *, leaving: str, field: str = "order-stage", timeout: float = 15, by_request_sn: str = ""
    ) -> dict[str, str]:
        """The status once its ``field`` (the order's stage, e.g. "sale_processing") is no longer ``leaving``,
        or as it is at ``timeout``."""
        deadline = time.monotonic() + timeout
        while True:
            answer = dict(self.status(orderid=orderid, **{"by-request-sn": by_request_sn}).json())
            if answer.get(field) != leaving or time.monotonic() > deadline:
                return answer
            time.sleep(0.05)

    def wait_order(self, client_orderid: str, timeout: float = 15) -> str:
        """The orderid of the order ``client_orderid`` once one exists: one the gateway opens by itself (a
        recurring charge) may be opened by a scheduler tick still running when the test's began."""
        deadline = time.monotonic() + timeout
        while True:
            answer = self.status(client_orderid=client_orderid)
            if "paynet-order-id" in answer.json() or time.monotonic() > deadline:
                assert answer.status_code == 200, f"{client_orderid}: {answer.text}"
                return str(answer.json()["paynet-order-id"])
            time.sleep(0.05)

    def wait_final(self, orderid: str, timeout: float = 15, by_request_sn: str = "") -> dict[str, str]:
        """The status once it is no longer ``processing``, or as it is at ``timeout``."""
        return self.wait_stage(
            orderid, leaving="processing", field="status", timeout=timeout, by_request_sn=by_request_sn
        )


def unreachable_connection(gateway: Gateway) -> str:
    """An ISO 8583 connection to a host that does not exist, made as operators make one (`kassa acquirer
    create`); its name. For the live endpoints of tests that send them nothing."""
    from tests.support.databases import NOWHERE

    name = f"nowhere-{uuid.uuid4().hex[:12]}"
    settings = [text for key, value in NOWHERE.items() for text in (f"--{key.replace('_', '-')}", value)]
    gateway.cli("acquirer", "create", "--name", name, *settings)
    return name


def minor_units(amount: str) -> str:
    whole, _, fraction = amount.partition(".")
    return str(int(whole + fraction.ljust(2, "0")))


def new_merchant(
    gateway: Gateway,
    login: str,
    currency: str = "USD",
    *,
    live: bool = False,
    connections: tuple[str, ...] = (),
    classic: bool = False,
    descriptor: str = "",
    multi_capture: bool = False,
) -> Merchant:
    """A merchant with one endpoint, written straight to the gateway's database (the same rows `kassa
    merchant create` and `kassa endpoint create` write; tests/ops covers the commands themselves). The
    endpoint's acquirer connections are ``connections``, by name; a live endpoint given none gets an ISO
    8583 connection of its own to a host that does not exist, for tests that send it nothing (a live
    endpoint is never made without one)."""
    from kassa.domain.merchants import Mode
    from kassa.settings import Settings
    from kassa.storage import acquirers as acquirer_store
    from kassa.storage import merchants as store
    from kassa.storage.database import open_database
    from kassa.vault.keys import load_vault
    from tests.support.databases import nowhere_connection

    vault = load_vault(Settings.from_env(gateway.env).vault_source)

    def create(conn: Any) -> tuple[str, int]:
        merchant = store.create_merchant(conn, vault, login, uuid.uuid4().hex, False, 0)
        mode = Mode.LIVE if live else Mode.SANDBOX
        spec = store.EndpointSpec(merchant.id, currency, mode, classic, descriptor, None, None, multi_capture)
        route = [acquirer_store.by_name(conn, name) for name in connections]
        if live and not route:
            route = [nowhere_connection(conn, vault)]
        return merchant.control_key, store.create_endpoint(conn, spec, 0, route)

    db = open_database(gateway.database_url, threads=1)
    try:
        key, endpoint_id = db.write_sync(create)
    finally:
        db.close()
    return Merchant(gateway, login, key, endpoint_id, currency)


def post_without_accept(gateway: Gateway, path: str, data: dict[str, str]) -> httpx.Response:
    """POST as a client that sends no Accept header at all (httpx adds ``Accept: */*`` unless removed)."""
    with httpx.Client(timeout=30, verify=TLS) as client:
        request = client.build_request("POST", gateway.base + path, data=data)
        del request.headers["accept"]
        return client.send(request)


def cli_run(gateway: Gateway, *args: str) -> subprocess.CompletedProcess[str]:
    """``kassa ARGS`` as an operator types it (no ``--json`` added), whatever its exit status."""
    return run_kassa(list(args), gateway.env)


def new_classic_merchant(gateway: Gateway, login: str, currency: str = "USD", *extra: str) -> Merchant:
    """A merchant created with ``kassa merchant create --classic`` and one endpoint."""
    created = gateway.cli("merchant", "create", "--login", login, "--classic")
    endpoint = gateway.cli("endpoint", "create", "--merchant", login, "--currency", currency, *extra)
    return Merchant(gateway, login, created["control_key"], endpoint["id"], currency)


def classic_fields(body: bytes) -> list[tuple[str, str]]:
    """Decodes a classic ``key=value\\n&key=value\\n`` answer into (key, value) pairs in the order sent."""
    from urllib.parse import unquote_plus

    pairs = []
    for part in body.decode().split("&"):
        name, _, value = part.partition("=")
        pairs.append((name, unquote_plus(value.removesuffix("\n"))))
    return pairs


def classic_body(pairs: list[tuple[str, str]]) -> bytes:
    """The classic format of CONTRACT §1 built independently: URL-encoded values, each followed by a newline."""
    from urllib.parse import quote_plus

    return "&".join(f"{name}={quote_plus(value)}\n" for name, value in pairs).encode()
