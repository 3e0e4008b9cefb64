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
    assert page is not None
    form = _Form()
    form.feed(page.html)
    assert (form.method, form.action) == ("post", "https://shop.example/return?cart=9")
    assert form.fields["client_orderid"] == "a<b"
    assert len(form.fields["control"]) == 40
    assert "form-action https://shop.example" in page.headers["content-security-policy"]
    assert "script-src 'nonce-" in page.headers["content-security-policy"]


def test_final_redirect_to_an_address_a_policy_cannot_name_safely_is_not_rendered() -> None:
    fields = {"status": "approved", "orderid": "5", "client_orderid": "a"}
    for address in (
        "https://shop.example;script-src 'unsafe-inline'/return",
        "https://shop.example,evil.example/return",
        "https://user@shop.example/return",
        "https://shop.example:99999/return",
        "https://shop\texample/return",
    ):
        assert final_redirect(address, fields, "key") is None, address


def test_final_redirect_names_an_international_host_in_its_punycode_form() -> None:
    fields = {"status": "approved", "orderid": "5", "client_orderid": "a"}
    page = final_redirect("https://bücher.example/return", fields, "key")
    assert page is not None
    assert "form-action https://xn--bcher-kva.example;" in page.headers["content-security-policy"]
