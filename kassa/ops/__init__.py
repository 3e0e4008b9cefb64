"""Operator tools: the `kassa` command line (and, later, the web console)."""
