"""The console's pages, one module per family; each has ``ROUTES``: (path, method, handler)."""
