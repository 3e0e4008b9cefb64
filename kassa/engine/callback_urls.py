"""The request URL of a callback: the receiver's URL with the signed fields added to its query, in the
form the HTTP client sends, or the reason it cannot be sent (``Unsendable``).

A URL stored before the request-time check refused it, or by a version that checked less, may be one no
request can be made to (a port out of range, a ``\\`` before ``@``, a host name with a space): it is held to
the same rule here (``domain.urls``), and one that fails it is an attempt that fails with its reason, never an
exception that leaves the callback pending. The SSRF guard checks the host of that parse: the host checked
is the host connected to.
"""

from __future__ import annotations

import re
import string
from urllib.parse import quote, quote_plus, urlsplit, urlunsplit

import yarl

from kassa.domain import urls


class Unsendable(ValueError):
    """A callback URL no request can be made to; the message is a short reason, safe to record and show
    (it never quotes the URL)."""


# What ``quote_plus`` changes: anything but letters, digits and ``_.~-``, in runs (a run quoted whole is
# the same as its characters quoted one by one); the two separators of ``_encoded`` are left alone.
_RESERVED = re.compile(r"[^A-Za-z0-9_.~\x00\x01-]+")


def _quoted_run(match: re.Match[str]) -> str:
    return quote_plus(match.group())


def _encoded(fields: dict[str, str]) -> str:
    """``urlencode(fields)``, in one pass over all names and values rather than two ``quote_plus`` calls a
    field: a callback has twenty fields, most of them ids, amounts and statuses that need no quoting, and
    ``urlencode`` cost more than sending it. Names and values are joined with two control characters that
    quoting never writes, then those become ``=`` and ``&``; text holding either is quoted field by field."""
    joined = "\x01".join(f"{name}\x00{value}" for name, value in fields.items())
    if joined.count("\x00") != len(fields) or joined.count("\x01") != len(fields) - 1:
        return "&".join(f"{quote_plus(name)}={quote_plus(value)}" for name, value in fields.items())
    return _RESERVED.sub(_quoted_run, joined).replace("\x00", "=").replace("\x01", "&")


def with_query(url: str, fields: dict[str, str]) -> str:
    """``url`` with ``fields`` added to its own query (encoded as ``urlencode`` would)."""
    parts = urlsplit(url)
    encoded = _encoded(fields) if fields else ""
    query = "&".join(part for part in (parts.query, encoded) if part)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, query, ""))


def request_url(target: str, fields: dict[str, str]) -> yarl.URL:
    """What a callback to ``target`` carrying ``fields`` requests: ``target`` checked by the rule it was
    checked by when the merchant named it (``domain.urls``, the HTTP client's parser), its origin as that
    parse gives it (an internationalised name in punycode), path and query as the merchant wrote them with
    anything that is not printable ASCII percent-encoded as UTF-8, then the fields."""
    try:
        checked = urls.sendable(target)
    except urls.UrlError as problem:
        raise Unsendable(f"the address {problem}") from None
    parts = urlsplit(target)  # the rule refused "\\": both parsers end the authority at the same place
    query = f"?{_ascii(parts.query)}" if parts.query else ""
    return yarl.URL(with_query(urls.origin(checked) + _ascii(parts.path) + query, fields), encoded=True)


_KEPT = string.punctuation  # with letters and digits: printable ASCII, sent as it is


def _ascii(text: str) -> str:
    return quote(text, safe=_KEPT)
