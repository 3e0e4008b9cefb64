"""Persistence: table definitions, migrations, the database runner and the queries."""
