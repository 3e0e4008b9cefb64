"""The nonces of OAuth requests that write nothing (a refusal, a kept answer, an operation without a
handler) are spent once their answer is made, many in one statement. Spent one per write, each cost a
database round trip, and on SQLite a group commit of its own: an RSA verification lets go of the
interpreter lock, and the writer thread then took the one nonce queued (1.0 nonces per commit on average,
against 23 for HMAC-SHA1). Written together, one write at a time, they went 24 to a statement on
PostgreSQL under the bench's load. docs/performance.md has what that saved."""

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
    """One write at a time: the nonces spent while it runs go in the next, so a write holds more of them
    the busier the process is, and the first waits only for the tasks ready in its turn."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._waiting: _Waiting = []
        self._writer: asyncio.Task[None] | None = None  # held: the loop keeps only weak references to tasks

    async def spend(self, nonce: NonceSpend) -> bool:
        """Whether the nonce was new and is now recorded (``NonceSpend.record``), once the write holding
        it is done."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((nonce, future))
        if self._writer is None:  # its first step runs after every task already ready this turn
            self._writer = asyncio.ensure_future(self._write_all())
        return await future

    async def _write_all(self) -> None:
        try:
            while self._waiting:
                waiting, self._waiting = self._waiting, []
                await self._write(waiting)
        finally:
            self._writer = None

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
