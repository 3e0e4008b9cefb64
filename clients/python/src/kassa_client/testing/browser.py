"""A customer on the gateway's hosted pages, played with plain HTTP form posts (no JavaScript, no browser):
the card form, the 3DS Method page, the sandbox issuer's challenge (whose code the sandbox page shows), the
auto-submitting forms between them, and the final redirect to the merchant's ``redirect_url``, which is
returned rather than followed."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from html.parser import HTMLParser
from urllib.parse import urljoin

import httpx

_REFRESH = re.compile(r'<meta[^>]+http-equiv="refresh"', re.IGNORECASE)
_HINT = re.compile(r'id="code-hint">([^<]+)<')


@dataclass
class _Form:
    id: str
    action: str
    method: str
    fields: dict[str, str] = field(default_factory=dict)


class _Forms(HTMLParser):
    def __init__(self, html: str) -> None:
        super().__init__()
        self.forms: dict[str, _Form] = {}
        self._current: _Form | None = None
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._current = _Form(values.get("id", ""), values.get("action", ""), values.get("method", "post"))
            self.forms[self._current.id] = self._current
        elif tag == "input" and self._current is not None and values.get("name"):
            self._current.fields[values["name"]] = values.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._current = None


class HostedBrowser:
    """``pay(url)`` fills the hosted card form and answers 3-D Secure; ``follow(url)`` takes a status
    answer's ``redirect_to`` (gateway-hosted 3DS of a direct sale). Both return the fields the gateway's
    final redirect would POST to ``redirect_url`` (empty when the order has none)."""

    def __init__(self, gateway_base: str, *, challenge_code: str | None = None, timeout: float = 15.0) -> None:
        self.gateway_base = gateway_base.rstrip("/")
        self.challenge_code = challenge_code  # None: the code the sandbox issuer's page shows
        self.timeout = timeout

    def pay(
        self,
        url: str,
        *,
        card_number: str = "4111111111111111",
        expiry: str = "12/30",
        cvv2: str = "123",
        name: str = "Jane Doe",
        receiving_card: str = "",
    ) -> dict[str, str]:
        card = {"cc-number": card_number, "cc-exp": expiry, "cc-csc": cvv2, "cc-name": name}
        if receiving_card:
            card["to-number"] = receiving_card
        return self._walk("GET", url, {}, card)

    def follow(self, url: str) -> dict[str, str]:
        return self._walk("GET", url, {}, {})

    def challenge(self, step: Mapping[str, str], term_url: str = "https://shop.example/3ds") -> dict[str, str]:
        """Merchant-hosted 3-D Secure: posts a status answer's challenge (``acs-url`` with ``creq``, or with
        ``pareq`` and ``md``) to the issuer, answers it, and returns what the issuer sends back (``cres``, or
        ``PaRes`` and ``MD``) for ``upload_cres_result`` or ``upload_pares_result``."""
        if step.get("creq"):
            posted = {"creq": step["creq"]}
        else:
            posted = {"PaReq": step["pareq"], "MD": step["md"], "TermUrl": term_url}
        return self._walk("POST", step["acs-url"], posted, {})

    def _walk(self, method: str, url: str, data: dict[str, str], card: dict[str, str]) -> dict[str, str]:
        deadline = time.monotonic() + self.timeout
        with httpx.Client(follow_redirects=True, timeout=self.timeout) as http:
            while time.monotonic() < deadline:
                page = http.get(url, params=data or None) if method == "GET" else http.post(url, data=data)
                forms = _Forms(page.text).forms
                here = str(page.url)
                if "card-form" in forms:
                    form, data = forms["card-form"], {**forms["card-form"].fields, **card}
                elif "challenge" in forms:
                    form = forms["challenge"]
                    hint = _HINT.search(page.text)
                    code = self.challenge_code if self.challenge_code is not None else hint[1] if hint else ""
                    data = {**form.fields, "code": code}
                elif "continue" in forms:  # the 3DS Method page: the gateway reads what the issuer saw
                    form, data = forms["continue"], forms["continue"].fields
                elif "next" in forms:
                    form, data = forms["next"], forms["next"].fields
                    target = urljoin(here, form.action)
                    if not target.startswith(self.gateway_base):
                        return dict(data)  # the final redirect to the merchant: its fields
                elif _REFRESH.search(page.text):
                    time.sleep(0.05)
                    method, url, data = "GET", here, {}
                    continue
                else:
                    return {}  # a final page without a redirect_url
                method, url = form.method.upper() or "POST", urljoin(here, form.action)
        raise TimeoutError(f"the hosted pages did not finish within {self.timeout} s (last: {url})")
