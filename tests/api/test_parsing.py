"""Form decoding: the same pairs as the standard library's parser, refusals for what is not form data."""

from __future__ import annotations

import random
from urllib.parse import parse_qsl

import pytest

from kassa.api.errors import ApiError
from kassa.api.parsing import parse_form


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
            expected = ApiError
        try:
            got: object = parse_form(body)
        except ApiError:
            got = ApiError
        assert got == expected, body


def test_invalid_utf8_escape_is_refused() -> None:
    with pytest.raises(ApiError, match="not UTF-8 form data"):
        parse_form(b"name=%FF")
