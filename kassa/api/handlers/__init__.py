"""Handlers, one module per operation family; each gets a checked request and returns reply fields."""
