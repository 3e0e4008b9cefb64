"""`kassa` commands for tests, each in a process of its own forked from one that imported the CLI already.

A `kassa` process spends about 0.35 s of CPU importing the CLI, SQLAlchemy and the command's module before
it does anything, and the suite runs well over a thousand commands: most of its CPU. ``run_kassa`` sends the
command to a server (one per test process, started on first use) that imported all of that once; the server
forks, and the child runs the CLI's ``main`` with the command's arguments, environment, working directory and
standard streams, then exits as the `kassa` script would. So each command still runs alone in a new process
(its own umask, settings, database connections and exit status), minus the imports. Long-lived commands
(``serve``, ``worker``, ``acquirer-sim``) and the tests of what the CLI imports start the real executable.

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
        request = json.dumps({"args": args, "env": env, "cwd": os.getcwd()}).encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.connect(self.address)
            socket.send_fds(conn, [_HEADER.pack(len(request))], [stream.fileno() for stream in streams])
            conn.sendall(request)
            answer = _exactly(conn, _EXIT.size)
        if len(answer) < _EXIT.size:
            raise RuntimeError(f"kassa {' '.join(args)} ended without an exit status")
        code: int = _EXIT.unpack(answer)[0]
        return code


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

    for module in set(cli.COMMAND_MODULES.values()):
        importlib.import_module(f"kassa.ops.cli.{module}")
    sys.path[0] = str(Path(KASSA).parent)  # as the `kassa` script's, not this folder's
    parent = os.getppid()
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # reaps its children on the way out
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        listener.bind(address)
        listener.listen(64)
        sys.stdout.write("ready\n")
        sys.stdout.flush()
        try:
            while os.getppid() == parent:  # ends with the test process that started it
                if select.select([listener], [], [], 0.2)[0]:
                    conn, _ = listener.accept()
                    if os.fork() == 0:
                        listener.close()
                        _child(conn, cli.main)
                    conn.close()
                _reap(os.WNOHANG)
        finally:
            _reap(0)


def _reap(options: int) -> None:
    """Waits for the commands that ended (with 0, for all): their CPU time then counts in this process's."""
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, options)[0]:
            pass


def _child(conn: socket.socket, main: object) -> None:
    """Runs one command as the `kassa` script does, from its streams to its exit status; never returns."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    header, fds, _, _ = socket.recv_fds(conn, _HEADER.size, 3)
    header += _exactly(conn, _HEADER.size - len(header))
    request = json.loads(_exactly(conn, _HEADER.unpack(header)[0]))
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
    with contextlib.suppress(OSError):
        conn.sendall(_EXIT.pack(code))
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
