"""The one rule of a sendable URL, parsed with yarl as the callback sender parses it."""

from __future__ import annotations

import pytest

from kassa.domain.urls import UrlError, sendable


@pytest.mark.parametrize(
    "text",
    [
        "http://127.0.0.1\\@8.8.8.8/",  # urllib and yarl read 8.8.8.8, browsers 127.0.0.1
        "http://127.0.0.1@8.8.8.8/",
        "http://@example.com/",
        "http://user:pw@example.com/",
        "http://h:99999/",
        "http://h:0/",
        "http://h:port/",
        "http://[::1/",
        "http://[fe80::1%25eth0]/",
        "http://ex%00ample.com/",
        "http://example.com/a b",
        "http://example.com/\t",
        "http://example.com/\x00",
        "http://example.com/\x7f",
        "http://example.com/\x9f",
        "http://example.com/\u2028",
        "http://example.com/a;b",
        "http://example.com/?a=1,2",
        "ftp://example.com/",
        "javascript:alert(1)",
        "//example.com/",
        "http:///path",
        "http://",
        "http://example.com/" + "a" * 1024,
    ],
)
def test_url_no_sender_can_use_is_refused(text: str) -> None:
    with pytest.raises(UrlError):
        sendable(text)


@pytest.mark.parametrize(
    ("text", "host"),
    [
        ("https://example.com/cb?x=1", "example.com"),
        ("http://127.0.0.1:8080/cb", "127.0.0.1"),
        ("http://[::1]:65535/cb", "::1"),
        ("https://пример.рф/путь", "xn--e1afmkfd.xn--p1ai"),
        ("http://BÜCHER.de/", "xn--bcher-kva.de"),
    ],
)
def test_sendable_url_is_parsed_with_its_host_as_sent_on_the_wire(text: str, host: str) -> None:
    assert sendable(text).raw_host == host
