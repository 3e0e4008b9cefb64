"""The request's log line, written past the logging machinery: the same JSON line the formatter writes,
at the configured level only, written when the event loop's turn ends, whole even when other threads log
at the same time."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kassa import logs

SERIAL = "afc35e9d-6011-4c2b-9a3e-771844497484"


@pytest.fixture(autouse=True)
def _logging_restored(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``configure`` sets up the whole process's logging: the other tests get theirs back."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    monkeypatch.setattr(logs, "_sink", logs._sink)
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _requests(count: int, operation: str = "sale", http_status: int = 200) -> None:
    """``count`` request lines logged as the pipeline logs them: on the event loop, one a turn."""

    async def serve() -> None:
        for _ in range(count):
            logs.log_request(SERIAL, operation, http_status, time.perf_counter())
            await asyncio.sleep(0)

    asyncio.run(serve())


def test_request_line_matches_what_the_formatter_writes_for_the_same_fields(tmp_path: Path) -> None:
    with (tmp_path / "kassa.log").open("w") as stream:
        logs.configure("INFO", stream)
        token = logs.serial_var.set(SERIAL)
        _requests(1)
        logging.getLogger("kassa.api").info("request", extra={"operation": "sale", "http_status": 200, "ms": 0.0})
        logs.serial_var.reset(token)
    fast, formatted = _lines(tmp_path / "kassa.log")
    assert list(fast) == list(formatted)
    assert {**fast, "ts": "", "ms": 0.0} == {**formatted, "ts": "", "ms": 0.0}
    assert str(fast["ts"]).endswith("Z") and len(str(fast["ts"])) == len("2026-11-23T20:38:53.834Z")


def test_request_line_is_not_written_below_the_configured_level(tmp_path: Path) -> None:
    with (tmp_path / "kassa.log").open("w") as stream:
        logs.configure("WARNING", stream)
        _requests(1)
    assert (tmp_path / "kassa.log").read_text() == ""


def test_request_line_goes_through_logging_to_a_stream_without_a_file() -> None:
    stream = io.StringIO()
    logs.configure("INFO", stream)
    _requests(1, "status", 404)
    [line] = [json.loads(text) for text in stream.getvalue().splitlines()]
    assert (line["msg"], line["operation"], line["http_status"]) == ("request", "status", 404)


def test_lines_of_threads_logging_at_once_stay_whole(tmp_path: Path) -> None:
    with (tmp_path / "kassa.log").open("w") as stream:
        logs.configure("INFO", stream)
        other = logging.getLogger("kassa.engine.worker")

        def others() -> None:
            for n in range(2000):
                other.info("transaction processed", extra={"order": n, "note": "x" * 300})

        threads = [threading.Thread(target=_requests, args=(2000,)), threading.Thread(target=others)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    entries = _lines(tmp_path / "kassa.log")
    assert sorted(str(e["msg"]) for e in entries) == ["request"] * 2000 + ["transaction processed"] * 2000


def test_request_lines_of_one_turn_of_the_event_loop_are_written_when_it_ends(tmp_path: Path) -> None:
    log = tmp_path / "kassa.log"
    with log.open("w") as stream:
        logs.configure("INFO", stream)

        async def turn() -> list[str]:
            for _ in range(3):
                logs.log_request(SERIAL, "sale", 200, time.perf_counter())
            during = log.read_text()
            await asyncio.sleep(0)
            return [during, log.read_text()]

        during, after = asyncio.run(turn())
    assert (during, len(after.splitlines())) == ("", 3)
