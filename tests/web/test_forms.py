"""Form decoding: the same pairs as the standard library's parser, refusals for what is not form data."""

from __future__ import annotations

import asyncio
import random
from typing import Any
from urllib.parse import parse_qsl

import pytest

from kassa.web.forms import MAX_BODY, FormError, parse_form, read_body


def _stdlib(body: bytes) -> list[tuple[str, str]]:
    return [(n, v.strip()) for n, v in parse_qsl(body.decode(), keep_blank_values=True, errors="strict")]


@pytest.mark.parametrize(
    "body", [b"a=1&b=&c", b"&&a=%20x+y&", b"x=%E2%82%AC&y=a%2Bb", b"=v&k=", b"a=1=2", b"n+m=v%26w", b""]
)
def test_form_pairs_match_parse_qsl(body: bytes) -> None:
    assert parse_form(body) == _stdlib(body)


def test_form_pairs_match_parse_qsl_on_random_bodies() -> None:
    rng = random.Random(6)
    for _ in range(5000):
        body = "".join(rng.choice("ab=&%+2E0F ") for _ in range(rng.randint(0, 14))).encode()
        try:
            expected: object = _stdlib(body)
        except UnicodeDecodeError:
            expected = FormError
        try:
            got: object = parse_form(body)
        except FormError:
            got = FormError
        assert got == expected, body


def test_invalid_utf8_escape_is_refused() -> None:
    with pytest.raises(FormError, match="not UTF-8 form data"):
        parse_form(b"name=%FF")


def _receive(*messages: dict[str, Any]) -> Any:
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0)

    return receive


def test_body_is_joined_from_its_chunks() -> None:
    chunks = _receive(
        {"type": "http.request", "body": b"a=1&", "more_body": True},
        {"type": "http.request", "body": b"b=2", "more_body": False},
    )
    assert asyncio.run(read_body(chunks, "7")) == b"a=1&b=2"


def test_body_cut_short_by_a_disconnect_is_refused_not_parsed() -> None:
    chunks = _receive({"type": "http.request", "body": b"amount=10", "more_body": True}, {"type": "http.disconnect"})
    with pytest.raises(FormError, match="ended early"):
        asyncio.run(read_body(chunks, "13"))


@pytest.mark.parametrize("declared", ["", str(MAX_BODY + 1)])
def test_body_larger_than_the_limit_is_refused_declared_or_not(declared: str) -> None:
    chunks = _receive(*[{"type": "http.request", "body": b"x" * 1024, "more_body": True}] * 80)
    with pytest.raises(FormError, match="larger than"):
        asyncio.run(read_body(chunks, declared))
