"""The crash test: sales with callbacks under load while the gateway is killed at random moments."""
