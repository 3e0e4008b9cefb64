"""The floor: the least a sale and a status call must do, as a bare ASGI app served like the ceiling.

A sale: parse the form, check the SHA-1 ``control``, validate the card (Luhn, expiry, CVV), encrypt PAN
and CVV with AES-GCM, write one order row durably (SQLite, WAL, ``synchronous=FULL``, one writer thread
with group commit, as Kassa does), answer. A status call: parse, check ``control``, read the order by
key on the event loop's thread, answer every field CONTRACT §5 gives a status-response of a card sale
(order, transaction and card). The order is one row holding all of it: no join, no framework, no
operations table, no second row, no job. The amount and its formatting, status and order stage, the
date, the Luhn check, the control and the serial number are Kassa's own functions.

Whatever Kassa does beyond this is what its features cost; what this app cannot reach, no Python
implementation of the same durable work on this server can. Run: ``python -m bench.floor --port P
--database FILE --seed N`` (``N`` orders stored first, for the status calls).
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import queue
import sqlite3
import threading
from typing import Any
from urllib.parse import parse_qsl

import orjson
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from bench.bodies import SALE_EMAIL
from bench.ceiling import CONTENT_TYPE, Message, lifespan, read_body
from kassa import randomness
from kassa.clock import date_time_text, now_ms
from kassa.domain import cards, money
from kassa.domain.lifecycle import Stage, status_of
from kassa.domain.transactions import TxType, order_stage
from kassa.ops.processes import serve
from kassa.signing.control import control_of

LOGIN, KEY, ENDPOINT_ID = "ceiling", "k" * 32, "1"
_USD = money.currency("USD")
_SCHEMA = """CREATE TABLE IF NOT EXISTS orders (
    id INTEGER PRIMARY KEY, client_orderid TEXT UNIQUE NOT NULL, amount INTEGER NOT NULL,
    email TEXT NOT NULL, pan BLOB NOT NULL, cvv BLOB NOT NULL, status TEXT NOT NULL,
    serial TEXT NOT NULL, bin TEXT NOT NULL, last_four TEXT NOT NULL, brand TEXT NOT NULL,
    exp_month INTEGER NOT NULL, exp_year INTEGER NOT NULL, holder TEXT NOT NULL, updated_ms INTEGER NOT NULL,
    captured INTEGER NOT NULL DEFAULT 0, refunded INTEGER NOT NULL DEFAULT 0,
    approval_code TEXT, rrn TEXT, processor_tx_id TEXT)"""
_INSERT = """INSERT INTO orders (client_orderid, amount, email, pan, cvv, status, serial, bin, last_four, brand,
    exp_month, exp_year, holder, updated_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_SEED = """INSERT INTO orders (client_orderid, amount, email, pan, cvv, status, serial, bin, last_four, brand,
    exp_month, exp_year, holder, updated_ms, captured, approval_code, rrn, processor_tx_id)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""
_STATUS = """SELECT id, client_orderid, amount, email, status, bin, last_four, brand, exp_month, exp_year, holder,
    updated_ms, captured, refunded, approval_code, rrn, processor_tx_id FROM orders WHERE id = ?"""


class Writer:
    """One thread, one connection, every insert waiting for its batch's durable commit."""

    def __init__(self, path: str) -> None:
        self._queue: queue.SimpleQueue[tuple[tuple[Any, ...], asyncio.AbstractEventLoop, asyncio.Future[int]]]
        self._queue = queue.SimpleQueue()
        self._conn = _connect(path)
        threading.Thread(target=self._run, daemon=True).start()

    def insert(self, row: tuple[Any, ...]) -> asyncio.Future[int]:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[int] = loop.create_future()
        self._queue.put((row, loop, future))
        return future

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while len(batch) < 256 and not self._queue.empty():
                batch.append(self._queue.get_nowait())
            self._conn.execute("BEGIN IMMEDIATE")
            ids = [_row_id(self._conn.execute(_INSERT, row)) for row, _, _ in batch]
            self._conn.execute("COMMIT")
            batch[0][1].call_soon_threadsafe(_settle, [(f, i) for (_, _, f), i in zip(batch, ids, strict=True)])


def _row_id(cursor: sqlite3.Cursor) -> int:
    """The id an INSERT gave its row (``lastrowid`` is never None after one into a rowid table)."""
    assert cursor.lastrowid is not None
    return cursor.lastrowid


def _settle(settled: list[tuple[asyncio.Future[int], int]]) -> None:
    for future, order_id in settled:
        future.set_result(order_id)


def _connect(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute(_SCHEMA)
    return conn


class Floor:
    def __init__(self, path: str) -> None:
        self.writer = Writer(path)
        self.reader = _connect(path)
        self.aead = AESGCM(os.urandom(32))

    async def sale(self, fields: dict[str, str]) -> dict[str, Any]:
        amount = money.parse_amount(fields["amount"], _USD)
        expected = control_of([ENDPOINT_ID, fields["client_orderid"], str(amount), fields["email"]], KEY)
        if not hmac.compare_digest(expected, fields["control"]):
            return {"type": "validation-error", "error-message": "control"}
        pan, cvv = fields["credit_card_number"], fields["cvv2"]
        month, year = int(fields["expire_month"]), int(fields["expire_year"])
        if not (cards.luhn_valid(pan) and cvv.isdigit() and 1 <= month <= 12):
            return {"type": "validation-error", "error-message": "card"}
        pan_ct = self.aead.encrypt(os.urandom(12), pan.encode(), None)
        cvv_ct = self.aead.encrypt(os.urandom(12), cvv.encode(), None)
        brand = cards.brand_of(pan)
        card = (pan[:6], pan[-4:], brand.value if brand else "", month, year)
        serial = randomness.uuid4()
        row = (fields["client_orderid"], amount, fields.get("email", SALE_EMAIL), pan_ct, cvv_ct, "processing", serial)
        order_id = await self.writer.insert((*row, *card, fields.get("card_printed_name", ""), now_ms()))
        return {"type": "async-response", "paynet-order-id": str(order_id), "status": "processing"}

    def status(self, fields: dict[str, str]) -> dict[str, Any]:
        if not hmac.compare_digest(control_of([LOGIN, fields["orderid"]], KEY), fields["control"]):
            return {"type": "validation-error", "error-message": "control"}
        found = self.reader.execute(_STATUS, (int(fields["orderid"]),)).fetchone()
        if found is None:
            return {"type": "validation-error", "error-message": "orderid"}
        order_id, client_orderid, amount, email = found[:4]
        stage = Stage(found[4])
        bin_, last_four, brand, month, year, holder, updated_ms = found[5:12]
        answer = {
            "type": "status-response",
            "serial-number": randomness.uuid4(),
            "status": status_of(stage).value,
            "merchant-order-id": client_orderid,
            "paynet-order-id": str(order_id),
            "transaction-type": "sale",
            "order-stage": order_stage(TxType.SALE, stage),
            "amount": money.format_amount(amount, _USD),
            "currency": "USD",
            "end-point-id": ENDPOINT_ID,
            "initial-amount": money.format_amount(amount, _USD),
            "captured-amount": money.format_amount(found[12], _USD),
            "refunded-amount": money.format_amount(found[13], _USD),
            "paynet-processing-date": date_time_text(updated_ms),
            "bin": bin_,
            "last-four-digits": last_four,
            "card-exp-month": f"{month:02d}",
            "card-exp-year": str(year),
            "cardholder-name": holder,
            "card-type": brand,
            "email": email,
        }
        optional = {"approval-code": found[14], "processor-rrn": found[15], "processor-tx-id": found[16]}
        answer.update({name: value for name, value in optional.items() if value})
        return answer

    async def __call__(self, scope: Message, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespan(receive, send)
            return
        fields = dict(parse_qsl((await read_body(receive)).decode()))
        answer = self.status(fields) if "/status/" in scope["path"] else await self.sale(fields)
        payload = orjson.dumps(answer)
        headers = [(b"content-type", CONTENT_TYPE), (b"content-length", str(len(payload)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": payload})


def seed(path: str, count: int) -> None:
    """``count`` approved sales, as the sandbox leaves them (captured, with approval code and RRN)."""
    conn = _connect(path)
    card = ("411111", "1111", "VISA", 12, 2030, "Jane Doe", now_ms())
    row = (1042, SALE_EMAIL, b"x" * 32, b"y" * 19, "approved", "00000000-0000-4000-8000-000000000000", *card)
    processed = (1042, "123456", "000000000001", "sandbox-1")
    with conn:
        conn.executemany(_SEED, [(f"seed-{n}", *row, *processed) for n in range(count)])
    conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--database", required=True)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    seed(args.database, args.seed)
    serve(Floor(args.database), "127.0.0.1", args.port)


if __name__ == "__main__":
    main()
