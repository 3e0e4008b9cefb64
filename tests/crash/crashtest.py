"""`make crashtest`: sales with callbacks under load while the gateway is SIGKILLed at random moments and
restarted; then every sale that got a 200 must be final and called back, none charged twice, and the
ledger must balance. Prints one line and exits non-zero on any violation.

    python -m tests.crash.crashtest [--rounds 20] [--backend sqlite|postgresql]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support.databases import fresh_postgres
from tests.support.gateway import Gateway, Merchant, free_port, new_merchant
from tests.support.operations import LEDGER_OK, ledger_check
from tests.support.receiver import Receiver, running


@dataclass
class Load:
    """Merchant threads sending sales; a sale whose answer was lost is sent again, as merchants do."""

    merchant: Merchant
    callback_url: str
    accepted: dict[str, str] = field(default_factory=dict)  # client_orderid -> paynet-order-id
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)

    def run(self, threads: int) -> list[threading.Thread]:
        started = [threading.Thread(target=self._client, daemon=True) for _ in range(threads)]
        for thread in started:
            thread.start()
        return started

    def _client(self) -> None:
        while not self.stop.is_set():
            client_orderid = f"crash-{uuid.uuid4().hex[:12]}"
            cvv2 = random.choice(["123", "123", "123", "116"])
            while not self.stop.is_set():
                try:
                    answer = self.merchant.sale(client_orderid, cvv2=cvv2, server_callback_url=self.callback_url)
                except httpx.TransportError:
                    time.sleep(0.05)  # the gateway is down: try the same order again
                    continue
                if answer.status_code == 200:
                    with self.lock:
                        self.accepted[client_orderid] = answer.json()["paynet-order-id"]
                break


@contextmanager
def database(backend: str, folder: Path) -> Iterator[str]:
    if backend == "sqlite":
        yield f"sqlite:///{folder / 'kassa.db'}"
    else:
        with fresh_postgres("kassa_crash") as url:
            yield url


def run(rounds: int, backend: str, threads: int = 8) -> tuple[bool, str]:
    env = {"KASSA_CALLBACK_BASE_DELAY": "0.5", "KASSA_CALLBACK_BACKOFF": "1.5", "KASSA_JOB_LEASE_SECONDS": "2"}
    env["KASSA_ADDRESS_RATE"] = "0"  # a flood from one address by design: what it tests is crash safety
    tmp = tempfile.mkdtemp(prefix="kassa-crash-")
    with database(backend, Path(tmp)) as url:
        gateway = Gateway(url, Path(tmp), port=free_port(), extra_env=env).start()
        merchant = new_merchant(gateway, "crash")
        with running(Receiver(free_port())) as receiver:
            load = Load(merchant, receiver.url)
            clients = load.run(threads)
            for _ in range(rounds):
                time.sleep(random.uniform(0.3, 1.2))
                gateway.kill()
                gateway.start()
            time.sleep(0.5)
            load.stop.set()
            for client in clients:
                client.join(30)
            problems = verify(gateway, merchant, load, receiver)
            gateway.stop()
    if problems:
        problems.append(f"the gateway's logs are kept in {tmp}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    summary = (
        f"crashtest {backend}: {rounds} kills, {len(load.accepted)} sales accepted, "
        f"{len(problems)} violations" + (f": {'; '.join(problems[:6])}" if problems else ", ledger consistent")
    )
    return not problems, summary


def verify(gateway: Gateway, merchant: Merchant, load: Load, receiver: Receiver) -> list[str]:
    problems: list[str] = []
    deadline = time.monotonic() + 90
    finals: dict[str, str] = {}
    for client_orderid, order in sorted(load.accepted.items()):
        status = merchant.wait_final(order, timeout=max(1.0, deadline - time.monotonic()))
        finals[order] = status.get("status", "?")
        if finals[order] not in ("approved", "declined"):
            problems.append(f"order {order} ({client_orderid}) is {finals[order]}")
    missing = list(finals)
    while missing and time.monotonic() < deadline:  # at least once: duplicates may come; every order must
        called_back = {r.query.get("orderid") for r in list(receiver.received)}
        missing = [order for order in finals if order not in called_back]
        time.sleep(0.2)
    if missing:
        outbox = gateway.cli("callbacks", "list", "--order", missing[0])
        problems.append(f"{len(missing)} orders never called back, e.g. {missing[:3]}; outbox of the first: {outbox}")
    listed = gateway.cli("order", "list", "--merchant", merchant.login, "--limit", "1000000")
    per_client: dict[str, int] = {}
    for order in listed:
        per_client[order["client_orderid"]] = per_client.get(order["client_orderid"], 0) + 1
    doubles = [c for c, n in per_client.items() if n > 1]
    if doubles:
        problems.append(f"{len(doubles)} client_orderids charged twice")
    report = ledger_check(merchant)
    if report != LEDGER_OK:
        problems.append(f"ledger check failed: {report}")
    return problems


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    args = parser.parse_args()
    backends = ["sqlite", "postgresql"] if args.backend == "both" else [args.backend]
    ok = True
    for backend in backends:
        passed, summary = run(args.rounds, backend)
        print(summary, flush=True)
        ok = ok and passed
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
