"""Kassa: a server-to-server card and payout gateway."""

__version__ = "0.1.0"
