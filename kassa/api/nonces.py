"""The nonces of OAuth requests that write nothing (a refusal, a kept answer, an operation without a
handler) are spent once their answer is made, many in one statement: those of one turn of the event loop
go in one write. Spent one per write, each cost a database round trip, and on SQLite a group commit of its
own: an RSA verification lets go of the interpreter lock, and the writer thread then took the one nonce
queued (batches of 1.0 nonces on average, against 23 for HMAC-SHA1). docs/performance.md has the numbers."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import TYPE_CHECKING

from kassa.storage import oauth_nonces
from kassa.storage.database import Database

if TYPE_CHECKING:  # the services hold a book, and the signature checks, which make spends, read services
    from kassa.api.signatures import NonceSpend

    _Waiting = list[tuple[NonceSpend, asyncio.Future[bool]]]


class NonceBook:
    def __init__(self, db: Database) -> None:
        self._db = db
        self._waiting: _Waiting = []
        self._writes: set[asyncio.Task[None]] = set()  # held: the loop keeps only weak references to tasks

    async def spend(self, nonce: NonceSpend) -> bool:
        """Whether the nonce was new and is now recorded (``NonceSpend.record``), once the write holding
        it is done."""
        loop = asyncio.get_running_loop()
        if not self._waiting:
            loop.call_soon(self._flush)  # after every task already ready this turn has queued its nonce
        future: asyncio.Future[bool] = loop.create_future()
        self._waiting.append((nonce, future))
        return await future

    def _flush(self) -> None:
        waiting, self._waiting = self._waiting, []
        write = asyncio.ensure_future(self._write(waiting))
        self._writes.add(write)
        write.add_done_callback(self._writes.discard)

    async def _write(self, waiting: _Waiting) -> None:
        spends = [(n.merchant_id, n.timestamp_s, n.nonce, n.key_id) for n, _ in waiting]
        try:
            recorded = await self._db.write_point(partial(oauth_nonces.record_many, spends=spends))
        except Exception as failure:
            for _, future in waiting:
                if not future.done():
                    future.set_exception(failure)
            return
        for nonce, future in waiting:
            seen = (nonce.merchant_id, nonce.timestamp_s, nonce.nonce)
            if not future.done():
                future.set_result(seen in recorded)
            recorded.discard(seen)  # a second spend of one nonce in this write is a replay
