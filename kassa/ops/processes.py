"""``kassa serve --processes N``: N server processes on one port.

The parent binds one listening socket per child with ``SO_REUSEPORT`` (the kernel spreads incoming
connections over them), forks the children and then only supervises: it forwards SIGTERM and SIGINT
to them as SIGTERM, restarts them one by one on SIGHUP, and when one child fails it stops the others,
so the service never runs degraded unnoticed. Each child builds its own services (database pools, job
workers, callback dispatcher) after the fork and serves its sockets; a child also gets SIGTERM if the
parent dies (``PR_SET_PDEATHSIG``).
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import math
import os
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from kassa.ops.connections import ConnectionLimits

_PR_SET_PDEATHSIG = 1
log = logging.getLogger("kassa.processes")


def serve(
    app: Any,
    host: str,
    port: int,
    sockets: list[socket.socket] | None = None,
    *,
    trusted_proxies: Sequence[str] = (),
    limits: ConnectionLimits | None = None,
    companions: Sequence[Companion] = (),
    grace_seconds: float | None = None,
    on_stop: Callable[[], None] | None = None,
    on_ready: Callable[[], None] | None = None,
) -> None:
    """Serves an ASGI app as every Kassa server process does (the benchmark's reference apps too):
    uvicorn with uvloop and httptools, no access log (the gateway logs each request itself).
    ``X-Forwarded-For``, ``-Proto`` and ``-Host`` are believed from ``trusted_proxies`` only; with
    ``limits``, slow or oversized request heads and stalled bodies close their connections. Each of
    ``companions`` (the operator console, the operations listener) is served on its own listener by the
    same process, and stops after the app has.

    On SIGTERM or SIGINT, ``on_stop`` is told at once; the listeners close, requests in flight get up to
    ``grace_seconds`` to finish, then the app's shutdown runs. ``on_ready`` is told once every listener
    is serving."""
    import uvicorn

    class Main(uvicorn.Server):
        def handle_exit(self, sig: int, frame: FrameType | None) -> None:
            if on_stop is not None:
                on_stop()
            super().handle_exit(sig, frame)

    main = Main(_config(app, host, port, trusted_proxies, limits, lifespan="on", grace=grace_seconds))
    others = [
        (_beside(_config(c.app, c.host, c.port, trusted_proxies, limits, lifespan="off", grace=grace_seconds)), c)
        for c in companions
    ]

    async def all_of_them() -> None:
        running = [asyncio.create_task(server.serve(sockets=c.sockets)) for server, c in others]
        serving = asyncio.create_task(main.serve(sockets=sockets))
        if on_ready is not None:
            await _ready([main, *(server for server, _ in others)], serving)
            if not serving.done():
                on_ready()
        try:
            await serving
        finally:
            for server, _ in others:
                server.should_exit = True
            await asyncio.gather(*running)

    import uvloop

    uvloop.run(all_of_them())


def beside(app: Any, host: str, port: int) -> Any:
    """A uvicorn server for ``app`` that leaves the signals to its process: run it with ``serve()`` and
    stop it with ``should_exit = True``."""
    return _beside(_config(app, host, port, (), None, lifespan="off", grace=None))


def _beside(config: Any) -> Any:
    import uvicorn

    class Beside(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield  # the process's main loop has the signals, and stops this server

    return Beside(config)


async def _ready(servers: list[Any], serving: asyncio.Task[None]) -> None:
    while not serving.done() and not all(server.started for server in servers):
        await asyncio.sleep(0.01)


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
    grace: float | None,
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
        timeout_graceful_shutdown=None if grace is None else math.ceil(grace),  # uvicorn takes whole seconds
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


Serve = Callable[[tuple[socket.socket, ...], Callable[[], None]], None]
"""Runs in a child: serves its sockets (the API's first, then its companions'), telling the callable once
it is ready for traffic."""

_READY_TIMEOUT_SECONDS = 120.0  # a new child that is not serving by then is given up on, the old one kept


def supervise(slots: list[tuple[socket.socket, ...]], serve: Serve, on_exit: Callable[[int], None]) -> int:
    """One forked child per slot of sockets; returns when all have exited, with the first failing exit
    code of a child (0 when all stopped cleanly). ``on_exit(pid)`` is told of every child that ended.

    SIGTERM and SIGINT stop the children gracefully (as SIGTERM); SIGHUP restarts them one after another,
    each new child forked on the sockets of the one it replaces and serving before that one is told to
    stop. The parent keeps every listening socket open, so a connection waiting in a socket's accept queue
    is taken by whichever child accepts next: a rolling restart refuses no connection."""
    return _Supervisor(slots, serve, on_exit).run()


class _Supervisor:
    def __init__(self, slots: list[tuple[socket.socket, ...]], serve: Serve, on_exit: Callable[[int], None]) -> None:
        self.slots = slots
        self.serve = serve
        self.on_exit = on_exit
        self.children: dict[int, int] = {}  # pid -> slot index
        self.retiring: set[int] = set()  # told to stop by a restart: their exit is no failure
        self.starting: set[int] = set()  # restarted and not yet serving: a failure keeps the old one on
        self.stopping = False
        self.restart_asked = False
        self.status = 0
        self.wakeup_r, wakeup_w = os.pipe()
        os.set_blocking(wakeup_w, False)
        signal.set_wakeup_fd(wakeup_w)

    def run(self) -> int:
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        signal.signal(signal.SIGHUP, self._ask_restart)
        signal.signal(signal.SIGCHLD, lambda _s, _f: None)  # only to wake the loop (the wakeup fd)
        for index in range(len(self.slots)):
            self._spawn(index)
        while self.children:
            self._reap()
            if self.restart_asked and not self.stopping:
                self.restart_asked = False
                self._roll()
            elif self.children:
                self._wait_for_signal()
        return self.status

    def _stop(self, _signum: int = signal.SIGTERM, _frame: FrameType | None = None) -> None:
        self.stopping = True
        for pid in self.children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGTERM)

    def _ask_restart(self, _signum: int, _frame: FrameType | None) -> None:
        self.restart_asked = True

    def _spawn(self, index: int, ready_w: int | None = None) -> int:
        pid = os.fork()
        if pid == 0:
            _child(index, self.slots, self.serve, ready_w)
        self.children[pid] = index
        return pid

    def _roll(self) -> None:
        for old, index in list(self.children.items()):
            if self.stopping or old not in self.children:
                continue
            ready_r, ready_w = os.pipe()
            new = self._spawn(index, ready_w)
            os.close(ready_w)
            self.starting.add(new)
            try:
                ready = self._await_ready(ready_r, new)
            finally:
                os.close(ready_r)
                self.starting.discard(new)
            if not ready:
                if not self.stopping:
                    log.error("a restarted server process did not start: the old one keeps serving")
                return
            self.retiring.add(old)
            with contextlib.suppress(ProcessLookupError):
                os.kill(old, signal.SIGTERM)
            while old in self.children:
                self._wait_for_signal()
                self._reap()

    def _await_ready(self, ready_r: int, new: int) -> bool:
        deadline = time.monotonic() + _READY_TIMEOUT_SECONDS
        while new in self.children and not self.stopping:
            left = deadline - time.monotonic()
            if left <= 0:
                self.retiring.add(new)
                os.kill(new, signal.SIGTERM)
                return False
            readable, _, _ = select.select([ready_r, self.wakeup_r], [], [], left)
            if ready_r in readable:
                return os.read(ready_r, 1) == b"r"
            self._drain_wakeups()
            self._reap()
        return False

    def _wait_for_signal(self) -> None:
        select.select([self.wakeup_r], [], [])
        self._drain_wakeups()

    def _drain_wakeups(self) -> None:
        os.set_blocking(self.wakeup_r, False)
        with contextlib.suppress(BlockingIOError):
            while os.read(self.wakeup_r, 512):
                pass

    def _reap(self) -> None:
        while self.children:
            pid, wait_status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                return
            self.children.pop(pid, None)
            self.on_exit(pid)
            code = os.waitstatus_to_exitcode(wait_status)
            told_to_stop = self.stopping or pid in self.retiring
            self.retiring.discard(pid)
            if (told_to_stop and code in (0, -signal.SIGTERM, -signal.SIGINT)) or pid in self.starting:
                continue
            if self.status == 0:  # a child failed: stop the rest rather than serve degraded unnoticed
                self.status = code or 1
                self._stop()


def _child(index: int, slots: list[tuple[socket.socket, ...]], serve: Serve, ready_w: int | None) -> None:
    """Runs in the forked child; never returns."""
    code = 0
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
            signal.signal(sig, signal.SIG_DFL)  # until uvicorn installs its own
        signal.signal(signal.SIGHUP, signal.SIG_IGN)  # restarts are the parent's
        _die_with_parent()
        for other, sockets in enumerate(slots):
            if other != index:
                for sock in sockets:
                    sock.close()
        serve(slots[index], lambda: _tell_ready(ready_w))
    except BaseException:  # the child must not fall back into the parent's code
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def _tell_ready(ready_w: int | None) -> None:
    if ready_w is not None:
        os.write(ready_w, b"r")
        os.close(ready_w)
