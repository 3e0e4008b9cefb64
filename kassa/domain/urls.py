"""The one rule of a URL the gateway sends to (callbacks) or sends a browser to (redirects).

A URL is checked when the merchant names it and used much later, by the callback sender (aiohttp, which
parses with yarl) or in a page's headers. A URL that passed here but that the sender cannot parse would
fail every attempt for ever, so it is parsed here with yarl as the sender parses it, and refused for
what no sender can use or what changes meaning between parsers.
"""

from __future__ import annotations

import re

import yarl

MAX_LENGTH = 1024
# Spaces and controls (C0, DEL, C1) break the request line or a header; ';' and ',' separate the
# directives of a header the URL ends up in (Content-Security-Policy, Link, Refresh); a backslash is a
# slash to browsers (WHATWG) but part of the user name to yarl and urllib, so the parsers disagree on the
# host (``http://127.0.0.1\@8.8.8.8/``).
_FORBIDDEN = re.compile(r"[\x00-\x20\x7f-\x9f\s;,\\]")
# For the OpenAPI document (ECMA-262 syntax): the characters ``_FORBIDDEN`` refuses, refused up front.
PATTERN = r"^https?://[^\x00-\x20\x7f-\x9f\s;,\\]+$"
# The host as it goes on the wire: a name in ASCII (punycode), an IPv4 or an IPv6 address (no zone: a
# percent sign in a host is an escape some resolvers decode and others do not).
_HOST = re.compile(r"[A-Za-z0-9._-]+|[0-9A-Fa-f:.]+")
_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://([^/?#]*)")


class UrlError(ValueError):
    """A URL that cannot be sent to; the message follows the field's name ("server_callback_url must ...")."""


def sendable(text: str) -> yarl.URL:
    """``text`` parsed as the sender parses it, with its host in ASCII (an internationalised name in
    its punycode form, as it goes on the wire); refused unless it is absolute http(s) with a host, no
    user information and a port from 1 to 65535."""
    if len(text) > MAX_LENGTH:
        raise UrlError(f"is longer than {MAX_LENGTH} characters")
    if _FORBIDDEN.search(text):
        raise UrlError("contains a space, a control character or one of ; , \\")
    try:
        url = yarl.URL(text)
        port = url.explicit_port  # yarl checks the range only when the port is read
    except (ValueError, UnicodeError):
        raise UrlError("is not a valid URL") from None
    if url.scheme not in ("http", "https") or not url.raw_host:
        raise UrlError("must be an absolute http(s) URL")
    if "@" in _authority(text):  # even empty user information (``http://@host/``), which yarl drops
        raise UrlError("must not carry a user name or password")
    if not _HOST.fullmatch(url.raw_host):
        raise UrlError("has an invalid host")
    if port is not None and not 1 <= port <= 65535:
        raise UrlError("has a port outside 1-65535")
    return url


def origin(url: yarl.URL) -> str:
    """``scheme://host[:port]`` of a ``sendable`` URL as it goes on the wire (punycode, IPv6 in brackets,
    the port only when written): what a Content-Security-Policy names and the SSRF guard checks."""
    return f"{url.scheme}://{url.raw_authority}"


def _authority(text: str) -> str:
    found = _AUTHORITY.match(text)
    return found[1] if found else ""
