"""Sample card and customer fields of the sandbox (CONTRACT §9: CVV2, passed apart, decides the outcome)."""

from __future__ import annotations

from typing import TypedDict


class Card(TypedDict):
    credit_card_number: str
    card_printed_name: str
    expire_month: str
    expire_year: str


class Customer(TypedDict):
    email: str
    ipaddress: str
    order_desc: str


CARD: Card = {
    "credit_card_number": "4111111111111111",
    "card_printed_name": "Jane Doe",
    "expire_month": "12",
    "expire_year": "2030",
}
CUSTOMER: Customer = {"email": "jane@example.com", "ipaddress": "203.0.113.7", "order_desc": "Test order"}
