"""The acquirer host simulator run on a thread of its own, for tests whose gateway runs in another process:
its switches are set from the test's thread (attributes read by the host's loop as each message comes)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from kassa.sandbox.acquirer_host import AcquirerHost


@contextmanager
def host_on_a_thread(**switches: object) -> Iterator[AcquirerHost]:
    host = AcquirerHost(**switches)  # type: ignore[arg-type]
    loop = asyncio.new_event_loop()
    started = threading.Event()
    stop = asyncio.Event()

    async def serve() -> None:
        await host.start()
        started.set()
        await stop.wait()
        await host.close()

    thread = threading.Thread(target=loop.run_until_complete, args=(serve(),), daemon=True)
    thread.start()
    assert started.wait(10), "the acquirer host did not start"
    try:
        yield host
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(10)
        loop.close()
