"""The final redirect page: an auto-submitting POST to the merchant, with signed fields."""

from __future__ import annotations

from html.parser import HTMLParser

from kassa.pages.redirect import final_redirect


class _Form(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.action = ""
        self.method = ""
        self.fields: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "form":
            self.action, self.method = values["action"], values["method"]
        if tag == "input":
            self.fields[values["name"]] = values["value"]


def test_final_redirect_posts_signed_fields_to_the_merchant_keeping_its_query() -> None:
    page = final_redirect(
        "https://shop.example/return?cart=9", {"status": "approved", "orderid": "5", "client_orderid": "a<b"}, "key"
    )
    form = _Form()
    form.feed(page.html)
    assert (form.method, form.action) == ("post", "https://shop.example/return?cart=9")
    assert form.fields["client_orderid"] == "a<b"
    assert len(form.fields["control"]) == 40
    assert "form-action https://shop.example" in page.headers["content-security-policy"]
    assert "script-src 'nonce-" in page.headers["content-security-policy"]
