"""Kassa's API without HTTP: the ASGI app called directly with ASGI messages, 50 calls at a time, on a
fresh SQLite database, so its own cost per request shows without uvicorn's and the load generator's.
Logging is a deployment's: KASSA_LOG_LEVEL (INFO unless set), JSON lines to a file in the temporary
data directory. With ``--profile``, the measured calls run again under cProfile. Run:
``python -m bench.inprocess status 20000 [--profile tottime]`` (or ``sale``, or ``floor-status``: the
floor's status app, the least the same answer costs; or ``refused``, ``oauth-hmac``, ``oauth-rsa``: one body
refused at its first field, as a sale with no signature checked, as a payout once its HMAC-SHA1 signature is
verified and its nonce written, as a v4 payout likewise with RSA-SHA256, so the difference is what OAuth
verification costs)."""

from __future__ import annotations

import argparse
import asyncio
import base64
import cProfile
import itertools
import os
import pstats
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterable
from typing import Any
from urllib.parse import urlencode

import orjson
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

from bench.bodies import MerchantKeys, OAuthSigner, oauth_bodies, refused_fields, sale_body, status_body
from bench.server import UNREACHED_RATE

CONCURRENCY = 50
_HEADERS = [(b"host", b"127.0.0.1"), (b"accept", b"application/vnd.pay+json")]
_CLIENT = ("127.0.0.1", 50000)

Call = Callable[[str, bytes], Awaitable[list[dict[str, Any]]]]


def _environment() -> None:
    data_dir = tempfile.mkdtemp(prefix="kassa-inprocess-")
    os.environ.update(
        KASSA_DATABASE_URL=f"sqlite:///{data_dir}/kassa.db",
        KASSA_DATA_DIR=data_dir,
        KASSA_VAULT_KEY=base64.b64encode(os.urandom(32)).decode(),
    )
    # Every call comes from one address: the limiter runs (and is measured) but never refuses.
    os.environ.setdefault("KASSA_ADDRESS_RATE", UNREACHED_RATE)


def _caller(app: Any) -> Call:
    async def call(path: str, body: bytes) -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        headers = [*_HEADERS, (b"content-length", str(len(body)).encode())]
        scope: dict[str, Any] = {"type": "http", "method": "POST", "path": path, "headers": headers}
        scope.update(scheme="http", client=_CLIENT)
        await app(scope, receive, send)
        return sent

    return call


def bench_merchant(services: Any) -> tuple[MerchantKeys, Call]:
    """The merchant ``bench`` with a USD sandbox endpoint, and a caller of the services' API."""
    from kassa.api.app import OperationDispatch
    from kassa.domain.merchants import Mode
    from kassa.storage import merchants as merchant_store

    def merchant(conn: Any) -> MerchantKeys:
        created = merchant_store.create_merchant(conn, services.vault, "bench", "k" * 32, False, 0)
        spec = merchant_store.EndpointSpec(created.id, "USD", Mode.SANDBOX, False, "", None, None, False)
        return MerchantKeys("bench", "k" * 32, merchant_store.create_endpoint(conn, spec, 0))

    return services.db.write_sync(merchant), _caller(OperationDispatch(None, services))  # type: ignore[arg-type]


async def _run(call: Call, path: str, bodies: list[bytes], count: int) -> float:
    gate = asyncio.Semaphore(CONCURRENCY)

    async def one(body: bytes) -> None:
        async with gate:
            await call(path, body)

    started = time.perf_counter()
    await asyncio.gather(*(one(bodies[i % len(bodies)]) for i in range(count)))
    return time.perf_counter() - started


Workload = tuple[Call, str, list[bytes], Callable[[], None]]  # caller, path, bodies, clean-up


async def _kassa(kind: str, count: int) -> Workload:
    # Imported here: the settings are read from the environment set up first.
    from kassa import logs
    from kassa.runtime import build_services
    from kassa.settings import Settings
    from kassa.storage.migrate import upgrade

    settings = Settings.from_env()
    # A deployment's log: its level (KASSA_LOG_LEVEL, INFO unless set), its lines in a file (a terminal
    # would cost more than the calls measured), open until the process ends.
    log_file = open(os.path.join(os.environ["KASSA_DATA_DIR"], "kassa.log"), "a")  # noqa: SIM115
    logs.configure(settings.log_level, log_file)
    upgrade(settings.database_url)
    services = build_services(settings, 0)
    keys, call = bench_merchant(services)
    if kind in OAUTH_PATHS:
        path = f"{settings.prefix}{OAUTH_PATHS[kind]}/{keys.endpoint_id}"
        bodies = [body.encode() for body in _oauth_bodies(kind, services, keys, path, count)]
        return call, path, bodies, services.db.close
    sale_path = f"{settings.prefix}/api/v2/sale/{keys.endpoint_id}"
    orders = [await call(sale_path, sale_body(keys, f"seed-{n}").encode()) for n in range(200)]
    if kind == "sale":
        sales = [sale_body(keys, f"run-{n}").encode() for n in range(3 * count + 2000)]
        return call, sale_path, sales, services.db.close
    ids = [orjson.loads(sent[1]["body"])["paynet-order-id"] for sent in orders]
    path = f"{settings.prefix}/api/v2/status/{keys.endpoint_id}"
    return call, path, [status_body(keys, order_id).encode() for order_id in ids], services.db.close


OAUTH_PATHS = {
    "refused": "/api/v2/sale",
    "oauth-hmac": "/api/v2/payout",
    "oauth-rsa": "/api/v4/payout",
}


def _oauth_bodies(kind: str, services: Any, keys: MerchantKeys, path: str, count: int) -> Iterable[str]:
    """A sale-sized body refused at its first field: control-signed for the sale, else signed with OAuth
    (the RSA key registered first), each with a nonce of its own (a nonce is accepted once)."""
    from kassa.clock import now_ms
    from kassa.domain.merchants import Mode
    from kassa.signing.rsa_keys import read_public_key
    from kassa.storage import merchant_keys

    refused = refused_fields(keys)
    if kind == "refused":
        return itertools.repeat(urlencode(refused), 3 * count + 2000)
    private = None
    if kind == "oauth-rsa":
        private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        pem = private.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo).decode()
        services.db.write_sync(lambda conn: merchant_keys.add(conn, 1, Mode.SANDBOX, read_public_key(pem), now_ms()))
    signer = OAuthSigner(keys.login, keys.control_key, private)
    fields = [{k: v for k, v in refused.items() if k != "control"}]
    return oauth_bodies(signer, f"http://127.0.0.1{path}", "run", 3 * count + 2000, fields)


def _floor() -> Workload:
    """The floor's status (``bench/floor.py``) through the same caller: Kassa's status call against the
    least the same answer costs."""
    from bench import floor

    database = os.path.join(os.environ["KASSA_DATA_DIR"], "floor.db")
    floor.seed(database, 200)
    keys = MerchantKeys(floor.LOGIN, floor.KEY, int(floor.ENDPOINT_ID))
    bodies = [status_body(keys, str(order_id)).encode() for order_id in range(1, 201)]
    return _caller(floor.Floor(database)), f"/api/v2/status/{floor.ENDPOINT_ID}", bodies, lambda: None


async def measure(kind: str, count: int, rounds: int, profile_sort: str | None) -> None:
    fresh = kind == "sale" or kind in OAUTH_PATHS  # a body sent twice would be a duplicate or a replay
    call, path, bodies, close = _floor() if kind == "floor-status" else await _kassa(kind, count * rounds)
    await _run(call, path, bodies[-2000:], 2000)  # warm-up (distinct sales: the last bodies)
    cpu = []
    for n in range(rounds):
        # The process's CPU (the writer thread's too) tells the cost of a call on a shared machine,
        # where wall time counts what the other processes took.
        started = time.process_time()
        elapsed = await _run(call, path, bodies[n * count : (n + 1) * count] if fresh else bodies, count)
        cpu.append((time.process_time() - started) / count * 1e6)
        print(f"{kind}: {count / elapsed:,.0f} calls/s, {cpu[-1]:.1f} µs of CPU a call (no HTTP)")
    print(f"{kind}: least of {rounds} rounds {min(cpu):.1f} µs of CPU a call")
    if profile_sort:
        profiler = cProfile.Profile()
        profiler.enable()
        await _run(call, path, bodies[rounds * count : (rounds + 1) * count] if fresh else bodies, count)
        profiler.disable()
        pstats.Stats(profiler).sort_stats(profile_sort).print_stats(40)
    close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("kind", choices=["status", "sale", "floor-status", *OAUTH_PATHS])
    parser.add_argument("count", type=int, nargs="?", default=20000)
    parser.add_argument("--rounds", type=int, default=1, help="measured rounds (the least CPU a call is the estimate)")
    parser.add_argument("--profile", metavar="SORT", help="cProfile sort key, e.g. tottime or cumulative")
    args = parser.parse_args()
    _environment()
    asyncio.run(measure(args.kind, args.count, args.rounds, args.profile))


if __name__ == "__main__":
    main()
