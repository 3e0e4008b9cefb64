"""Pure payment-domain rules: no I/O, so every layer can share them and tests need no fixtures."""
