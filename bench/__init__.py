"""Benchmark v0 of the Kassa gateway: sale acceptance and status throughput against a trivial ASGI ceiling.

Run it with ``make bench`` or ``.venv/bin/python -m bench --help``.
"""
