"""The operator console: a web application for the people who run the gateway, on a listener of its own
(never the merchant API's), with its own sign-in, roles and audit log (docs/console.md)."""
