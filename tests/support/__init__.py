"""Test harness: real gateway processes, a merchant's client, databases."""
