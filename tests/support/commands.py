"""`kassa` commands for tests, each in a process of its own forked from one that imported the CLI already.

A `kassa` process spends about 0.35 s of CPU importing the CLI, SQLAlchemy and the command's module before
it does anything, and the suite runs well over a thousand commands: most of its CPU. ``run_kassa`` sends the
command to a server (one per test process, started on first use) that imported all of that once; the server
forks, and the child runs the CLI's ``main`` with the command's arguments, environment, working directory and
standard streams, then exits as the `kassa` script would. So each command still runs alone in a new process
(its own umask, settings, database connections and exit status), minus the imports.

``spawn_kassa`` starts a long-lived command the same way and returns at once, with a handle that behaves as
the ``subprocess.Popen`` of the real executable would (its pid, signals, ``poll``, ``wait``, exit status, a
signal's as a negative number): the test gateways' ``kassa serve``. The suite starts about two hundred of
them; each took 0.75 s of CPU to its first answer, 0.22 s forked (the server imports what ``serve`` does).
A server of several processes (``--processes``) is started from the executable: prometheus-client chooses
its multiprocess mode when first imported, and the server has imported it. So are ``worker`` and
``acquirer-sim``, and the tests of what the CLI imports.

Run as ``python tests/support/commands.py SOCKET``: the server's own side (a script, so that the CLI's usage
lines name `kassa` as the executable's do).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import locale
import os
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path
from typing import BinaryIO

KASSA = str(Path(sys.executable).parent / "kassa")
_HEADER = struct.Struct("!I")
_EXIT = struct.Struct("!i")
_PID = struct.Struct("!i")
# What ``kassa serve`` imports after its command's module: the server imports it once too, for spawned gateways.
_SERVING = (
    "kassa.api.app",
    "kassa.console.app",
    "kassa.ops.connections",
    "kassa.ops.hosts",
    "kassa.ops.probes",
    "kassa.ops.processes",
    "kassa.runtime",
    "uvicorn.lifespan.on",
    "uvicorn.loops.uvloop",
    "uvicorn.protocols.http.httptools_impl",
    "uvloop",
)


def run_kassa(args: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """``kassa ARGS`` with ``env`` (and ``stdin`` as its standard input, else none), as ``subprocess.run``
    with ``capture_output=True, text=True`` reports it."""
    with contextlib.ExitStack() as files:
        given = files.enter_context(tempfile.TemporaryFile()) if stdin is not None else None
        if given is not None:
            given.write(stdin.encode())
            given.seek(0)
        source = given or files.enter_context(open(os.devnull, "rb"))
        out, err = (files.enter_context(tempfile.TemporaryFile()) for _ in range(2))
        code = _server().run(args, env, (source, out, err))
        return subprocess.CompletedProcess([KASSA, *args], code, _text(out), _text(err))


def spawn_kassa(args: list[str], env: dict[str, str], output: BinaryIO) -> Spawned | subprocess.Popen[bytes]:
    """``kassa ARGS`` with ``env``, its standard output and error to ``output`` and no standard input, as
    ``subprocess.Popen`` starts it; returns at once. A server of several processes from the executable."""
    if "--processes" in args:
        return subprocess.Popen([KASSA, *args], env=env, stdin=subprocess.DEVNULL, stdout=output, stderr=output)
    with open(os.devnull, "rb") as source:
        return _server().spawn(args, env, (source, output, output))


class Spawned:
    """A spawned command, as its ``subprocess.Popen`` would show it. The server that forked it waits for it
    and sends its exit status (``os.waitstatus_to_exitcode``) on the connection that asked for it."""

    def __init__(self, args: list[str], pid: int, conn: socket.socket) -> None:
        self.args = [KASSA, *args]
        self.pid = pid
        self.returncode: int | None = None
        self._conn = conn

    def poll(self) -> int | None:
        return self._ended(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._ended(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _ended(self, timeout: float | None) -> int | None:
        if self.returncode is None and select.select([self._conn], [], [], timeout)[0]:
            answer = _exactly(self._conn, _EXIT.size)
            if len(answer) < _EXIT.size:
                raise RuntimeError(f"{' '.join(self.args)} ended without an exit status")
            self.returncode = _EXIT.unpack(answer)[0]
            self._conn.close()
        return self.returncode


def _text(file: BinaryIO) -> str:
    """The stream's text as ``subprocess.run(text=True)`` decodes it (the locale's encoding, newlines made \\n)."""
    file.seek(0)
    text = file.read().decode(locale.getpreferredencoding(False))
    return text.replace("\r\n", "\n").replace("\r", "\n")


class _Server:
    """The forking server of this test process, and how to ask it for a command."""

    def __init__(self) -> None:
        folder = tempfile.mkdtemp(prefix="kassa-commands-")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        self.address = str(Path(folder) / "socket")
        self.process = subprocess.Popen(
            [sys.executable, __file__, self.address], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline() != b"ready\n":
            raise RuntimeError("the command server did not start")
        atexit.register(self.stop)

    def stop(self) -> None:
        """Waited for, so that the CPU time of the commands it ran counts in this process's children's."""
        self.process.terminate()
        self.process.wait(10)

    def run(self, args: list[str], env: dict[str, str], streams: tuple[BinaryIO, BinaryIO, BinaryIO]) -> int:
        return self.spawn(args, env, streams).wait()

    def spawn(self, args: list[str], env: dict[str, str], streams: tuple[BinaryIO, BinaryIO, BinaryIO]) -> Spawned:
        """Asks for ``kassa ARGS``; the server sends its pid on the connection, then its exit status."""
        request = json.dumps({"args": args, "env": env, "cwd": os.getcwd()}).encode()
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(self.address)
            socket.send_fds(conn, [_HEADER.pack(len(request))], [stream.fileno() for stream in streams])
            conn.sendall(request)
            answer = _exactly(conn, _PID.size)
            if len(answer) < _PID.size:
                raise RuntimeError(f"kassa {' '.join(args)} did not start")
        except BaseException:
            conn.close()
            raise
        return Spawned(args, _PID.unpack(answer)[0], conn)


_started: _Server | None = None
_starting = threading.Lock()


def _server() -> _Server:
    global _started
    with _starting:
        if _started is None or _started.process.poll() is not None:
            _started = _Server()
        return _started


def _exactly(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size and (chunk := conn.recv(size - len(data))):
        data += chunk
    return data


# --- the server's side --------------------------------------------------------------------------------------


def _serve(address: str) -> None:
    from kassa.ops import cli

    for module in (*{f"kassa.ops.cli.{name}" for name in cli.COMMAND_MODULES.values()}, *_SERVING):
        importlib.import_module(module)
    sys.path[0] = str(Path(KASSA).parent)  # as the `kassa` script's, not this folder's
    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # reaps its children on the way out
    ended_r, ended_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(ended_w)  # a command that ends wakes the loop: its status goes out at once
    signal.signal(signal.SIGCHLD, lambda *_: None)
    asking: dict[int, socket.socket] = {}  # by command's pid, the connection that asked for it
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(address)
        listener.listen(64)
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        try:
            while os.getppid() == parent:  # ends with the test process that started it
                ready = select.select([listener, ended_r], [], [], 0.2)[0]
                if ended_r in ready:
                    os.read(ended_r, 512)
                if listener in ready:
                    conn, _ = listener.accept()
                    pid = os.fork()
                    if pid == 0:  # the child keeps none of the server's descriptors: a gateway lives long
                        for kept in (listener, *asking.values()):
                            kept.close()
                        os.close(ended_r)
                        os.close(ended_w)
                        _child(conn, cli.main)
                    _tell(conn, _PID.pack(pid))
                    asking[pid] = conn
                _reap(os.WNOHANG, asking)
        finally:
            for pid in asking:  # a spawned server the tests left running
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            _reap(0, asking)


def _reap(options: int, asking: dict[int, socket.socket]) -> None:
    """Waits for the commands that ended (with 0, for all), and sends each one's exit status as
    ``subprocess`` gives it (a signal's negative) to the connection that asked for it. Their CPU time then
    counts in this process's."""
    with contextlib.suppress(ChildProcessError):
        while (ended := os.waitpid(-1, options))[0]:
            conn = asking.pop(ended[0], None)
            if conn is not None:
                _tell(conn, _EXIT.pack(os.waitstatus_to_exitcode(ended[1])))
                conn.close()


def _tell(conn: socket.socket, data: bytes) -> None:
    with contextlib.suppress(OSError):  # the test that asked has gone
        conn.sendall(data)


def _child(conn: socket.socket, main: object) -> None:
    """Runs one command as the `kassa` script does, from its streams to its exit status; never returns."""
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGTERM, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
    header += _exactly(conn, _HEADER.size - len(header))
    request = json.loads(_exactly(conn, _HEADER.unpack(header)[0]))
    conn.close()  # the server sends the exit status: a server this spawns must not hold the connection
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    sys.argv = [KASSA, *request["args"]]
    code = _exit_code(main)
    threading._shutdown()  # type: ignore[attr-defined]  # as the interpreter does before atexit: joins threads
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _exit_code(main: object) -> int:
    """What ``sys.exit(main())`` in the `kassa` script makes the process's exit status."""
    try:
        assert callable(main)
        main()
    except SystemExit as leaving:
        if leaving.code is None or isinstance(leaving.code, int):
            return (leaving.code or 0) % 256  # what the operating system keeps of it
        print(leaving.code, file=sys.stderr)
        return 1
    except BaseException:
        traceback.print_exc()
        return 1
    return 0


if __name__ == "__main__":
    _serve(sys.argv[1])
