"""Request and callback signatures: SHA-1 `control` formulas and OAuth 1.0a."""
