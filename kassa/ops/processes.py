"""``kassa serve --processes N``: N server processes on one port.

The parent binds one listening socket per child with ``SO_REUSEPORT`` (the kernel spreads incoming
connections over them), forks the children and then only supervises: it forwards SIGTERM and SIGINT
to them as SIGTERM, and when one child fails it stops the others, so the service never runs degraded
unnoticed. Each child builds its own services (database pools, job workers, callback dispatcher) after
the fork and serves its socket; a child also gets SIGTERM if the parent dies (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import socket
import sys
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from kassa.ops.connections import ConnectionLimits

_PR_SET_PDEATHSIG = 1


def serve(
    app: Any,
    host: str,
    port: int,
    sockets: list[socket.socket] | None = None,
    *,
    trusted_proxies: Sequence[str] = (),
    limits: ConnectionLimits | None = None,
    companion: Companion | None = None,
) -> None:
    """Serves an ASGI app as every Kassa server process does (the benchmark's reference apps too):
    uvicorn with uvloop and httptools, no access log (the gateway logs each request itself).
    ``X-Forwarded-For``, ``-Proto`` and ``-Host`` are believed from ``trusted_proxies`` only; with
    ``limits``, slow or oversized request heads and stalled bodies close their connections. A
    ``companion`` (the operator console) is served on its own listener by the same process and stops
    with it."""
    import uvicorn

    main = uvicorn.Server(_config(app, host, port, trusted_proxies, limits, lifespan="on"))
    if companion is None:
        main.run(sockets=sockets)
        return

    class Second(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the main server has the signals, and stops this one

    second = Second(_config(companion.app, companion.host, companion.port, trusted_proxies, limits, lifespan="off"))

    async def both() -> None:
        running = asyncio.create_task(second.serve(sockets=companion.sockets))
        try:
            await main.serve(sockets=sockets)
        finally:
            second.should_exit = True
            await running

    import uvloop

    uvloop.run(both())


@dataclass(frozen=True)
class Companion:
    """A second application of the same process on a listener of its own: ``sockets`` when the parent
    bound them (``--processes``), else ``host:port``."""

    app: Any
    host: str
    port: int
    sockets: list[socket.socket] | None = None


def _config(
    app: Any,
    host: str,
    port: int,
    trusted: Sequence[str],
    limits: ConnectionLimits | None,
    *,
    lifespan: Literal["on", "off"],
) -> Any:
    import uvicorn

    from kassa.ops.connections import guarded_protocol
    from kassa.ops.forwarding import ProxyHeaders

    return uvicorn.Config(
        ProxyHeaders(app, list(trusted)) if trusted else app,
        host=host,
        port=port,
        loop="uvloop",
        http="httptools" if limits is None else guarded_protocol(limits),
        log_config=None,
        access_log=False,
        lifespan=lifespan,
        proxy_headers=False,  # ProxyHeaders above: uvicorn's, marking requests from trusted proxies
    )


def listening_sockets(host: str, port: int, count: int) -> list[socket.socket]:
    """``count`` sockets listening on ``host:port`` together; port 0 means one free port for all."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sockets: list[socket.socket] = []
    for _ in range(count):
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
        sock.listen(2048)
        port = int(sock.getsockname()[1])
        sockets.append(sock)
    return sockets


def _die_with_parent() -> None:
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _child(sock: socket.socket, others: list[socket.socket], serve: Callable[[socket.socket], None]) -> None:
    """Runs in the forked child; never returns."""
    code = 0
    try:
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)  # until uvicorn installs its own
        _die_with_parent()
        for other in others:
            if other is not sock:
                other.close()
        serve(sock)
    except BaseException:  # the child must not fall back into the parent's code
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def supervise(sockets: list[socket.socket], serve: Callable[[socket.socket], None]) -> int:
    """One forked child per socket running ``serve(socket)``; returns when all have exited, with the
    first non-zero exit code of a child (0 when all stopped cleanly). A child that dies of the SIGTERM
    it was sent stopped cleanly: uvicorn shuts down gracefully, then re-raises the signal it caught."""
    children: set[int] = set()
    stopping = False

    def stop_children(_signum: int = signal.SIGTERM, _frame: FrameType | None = None) -> None:
        nonlocal stopping
        stopping = True
        for pid in children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop_children)
    for sock in sockets:
        pid = os.fork()
        if pid == 0:
            _child(sock, sockets, serve)
        children.add(pid)
    for sock in sockets:
        sock.close()
    status = 0
    while children:
        pid, wait_status = os.wait()
        children.discard(pid)
        code = os.waitstatus_to_exitcode(wait_status)
        if stopping and code in (-signal.SIGTERM, -signal.SIGINT):
            continue
        if code != 0 and status == 0:
            status = code
            stop_children()
    return status
