"""The nonces of OAuth requests that write nothing (a refusal, a kept answer, an operation without a
handler) are spent once their answer is made, many in one statement. Spent one per write, each cost a
database round trip, and on SQLite a group commit of its own: an RSA verification lets go of the
interpreter lock, and the writer thread then took the one nonce queued (1.0 nonces per commit on average,
against 23 for HMAC-SHA1). Written together, one write at a time, they went 24 to a statement on
PostgreSQL under the bench's load. docs/performance.md has what that saved."""

from __future__ import annotations

import asyncio
from functools import partial

from kassa.storage import oauth_nonces
from kassa.storage.database import Database
from kassa.storage.oauth_nonces import Spend

_Waiting = list[tuple[Spend, asyncio.Future[bool]]]


class NonceBook:
    """One write at a time: the nonces spent while it runs go in the next, so a write holds more of them
    the busier the process is, and the first waits only for the tasks ready in its turn."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._waiting: _Waiting = []
        self._writer: asyncio.Task[None] | None = None  # held: the loop keeps only weak references to tasks

    async def spend(self, spend: Spend) -> bool:
        """Whether the nonce was new and is now recorded (``oauth_nonces.record``), once the write holding
        it is done."""
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        self._waiting.append((spend, future))
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
        try:
            recorded = await self._db.write_point(partial(oauth_nonces.record_many, spends=[s for s, _ in waiting]))
        except Exception as failure:
            for _, future in waiting:
                if not future.done():
                    future.set_exception(failure)
            return
        for (merchant_id, timestamp_s, nonce, _), future in waiting:
            seen = (merchant_id, timestamp_s, nonce)
            if not future.done():
                future.set_result(seen in recorded)
            recorded.discard(seen)  # a second spend of one nonce in this write is a replay
