"""Benchmark v1 of the Kassa gateway: sale and status against a trivial ASGI ceiling, localstripe as a peer, end
to end with callbacks at a fixed rate, status over millions of stored orders, and 1 vs 2 server processes.

Run it with ``make bench`` or ``.venv/bin/python -m bench --help``.
"""
