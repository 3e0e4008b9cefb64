"""Test helpers for merchants' own suites: a throwaway Kassa sandbox (``SandboxGateway``), a receiver for
its callbacks and a plain-HTTP customer for its hosted pages; the pytest plugin (``pytest_plugin``) hands
them to tests as the ``kassa_sandbox`` fixture."""

from kassa_client.testing.browser import HostedBrowser
from kassa_client.testing.sandbox import CallbackReceiver, Sandbox, SandboxGateway

__all__ = ["CallbackReceiver", "HostedBrowser", "Sandbox", "SandboxGateway"]
