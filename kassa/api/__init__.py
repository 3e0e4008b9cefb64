"""The merchant-facing HTTP API: the operation table, request pipeline, handlers and rendering."""
