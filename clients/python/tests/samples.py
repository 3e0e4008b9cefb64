"""Sample card and customer fields of the sandbox (CONTRACT §9: CVV2 decides the outcome)."""

CARD = {
    "credit_card_number": "4111111111111111",
    "card_printed_name": "Jane Doe",
    "expire_month": "12",
    "expire_year": "2030",
}
CUSTOMER = {"email": "jane@example.com", "ipaddress": "203.0.113.7", "order_desc": "Test order"}
