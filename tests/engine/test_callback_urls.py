"""The callback URL: the merchant's own query kept, the signed fields appended as urlencode would."""

from __future__ import annotations

import random
from urllib.parse import urlencode

from kassa.engine.callback_urls import with_query


def test_fields_are_appended_to_the_receivers_own_query() -> None:
    assert with_query("https://shop.example/cb?site=7", {"status": "approved"}) == (
        "https://shop.example/cb?site=7&status=approved"
    )


def test_encoding_matches_urlencode_for_any_text() -> None:
    rng = random.Random(4)
    alphabet = "aZ09_.-~ +&=%/?é€\n\x00\x01"

    def text() -> str:
        return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))

    for _ in range(3000):
        fields = {text(): text() for _ in range(rng.randint(1, 4))}
        assert with_query("http://h/p", fields) == "http://h/p?" + urlencode(fields)
