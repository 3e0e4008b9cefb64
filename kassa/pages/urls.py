"""Addresses of the customer-facing pages, below the gateway's public base (with its prefix)."""

from __future__ import annotations


def form(base: str, token: str) -> str:
    return f"{base}/form/{token}"


def checkout(base: str, token: str) -> str:
    return f"{base}/checkout/{token}"


def acs_method(base: str) -> str:
    return f"{base}/acs/method"


def acs_challenge(base: str) -> str:
    return f"{base}/acs/challenge"


def acs_pareq(base: str) -> str:
    return f"{base}/acs/pareq"


def method_notification(base: str) -> str:
    return f"{base}/3ds/method-notification"


def challenge_return(base: str) -> str:
    """Where the ACS sends CRes/PaRes back for gateway-hosted flows (notification URL / TermUrl)."""
    return f"{base}/3ds/complete"
