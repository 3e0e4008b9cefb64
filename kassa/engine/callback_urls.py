"""The request URL of a callback: the receiver's URL with the signed fields added to its query, in the
form the HTTP client sends, or the reason it cannot be sent (``Unsendable``).

A URL that passed the request-time check may still be one no request can be made to (a port out of range,
a ``\\`` before ``@``, a host name with a space): every such URL is an attempt that fails with its reason,
never an exception that leaves the callback pending. It is parsed here once, by the parser the HTTP client
uses (yarl), and the SSRF guard checks the host of that parse: the host checked is the host connected to.
"""

from __future__ import annotations

import re
import string
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

import yarl


class Unsendable(ValueError):
    """A callback URL no request can be made to; the message is a short reason, safe to record and show
    (it never quotes the URL)."""


_UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")


def _quoted(text: str) -> str:
    """``quote_plus``, skipped for the many values it would leave as they are (ids, amounts, statuses):
    a callback has some forty fields and ``urlencode`` cost more than sending it."""
    return text if _UNRESERVED.fullmatch(text) else quote_plus(text)


def with_query(url: str, fields: dict[str, str]) -> str:
    """``url`` with ``fields`` added to its own query (encoded as ``urlencode`` would)."""
    parts = urlsplit(url)
    encoded = "&".join(f"{_quoted(name)}={_quoted(value)}" for name, value in fields.items())
    query = "&".join(part for part in (parts.query, encoded) if part)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def request_url(target: str, fields: dict[str, str]) -> yarl.URL:
    """What a callback to ``target`` carrying ``fields`` requests: the host in its ASCII form (an
    internationalised name in punycode), anything in the path and query that is not printable ASCII
    percent-encoded as UTF-8 (what is already escaped stays as it is), then the fields."""
    try:
        parts = urlsplit(target)
    except ValueError:
        raise Unsendable("the host cannot be parsed") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https"):
        raise Unsendable("the scheme is not http or https")
    try:
        port = parts.port
    except ValueError:
        port = 0
    if port == 0:
        raise Unsendable("invalid port")
    host = _ascii_host(parts.hostname)
    userinfo, at, _ = parts.netloc.rpartition("@")
    netloc = f"{_ascii(userinfo)}{at}{f'[{host}]' if ':' in host else host}{'' if port is None else f':{port}'}"
    text = with_query(urlunsplit((scheme, netloc, _ascii(parts.path), _ascii(parts.query), "")), fields)
    try:
        url = yarl.URL(text, encoded=True)
    except ValueError:
        raise Unsendable("the address cannot be parsed") from None
    if url.raw_host != host:  # the two parsers disagree on the host: send it nowhere
        raise Unsendable("the address cannot be parsed")
    return url


def _ascii_host(hostname: str | None) -> str:
    if not hostname:
        raise Unsendable("no host")
    try:
        host = yarl.URL.build(scheme="http", host=hostname).raw_host
    except ValueError:  # spaces, control characters, a name IDNA refuses
        raise Unsendable("invalid host name") from None
    if not host:
        raise Unsendable("invalid host name")
    return host


_KEPT = string.punctuation  # with letters and digits: printable ASCII, sent as it is


def _ascii(text: str) -> str:
    return quote(text, safe=_KEPT)
