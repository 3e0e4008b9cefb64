"""What the engine asks of an acquirer (``interface``): the sandbox implements it (``kassa.sandbox``); a
real acquirer's connector would be a module here implementing the same ``Processor``."""
