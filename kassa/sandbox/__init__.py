"""The built-in sandbox of CONTRACT §9: an acquirer (``acquirer``) and a card issuer with its 3-D Secure
decisions (``issuer``), both driven by trigger values (``triggers``). Its cardholder-facing ACS pages are
customer pages, in ``kassa.pages.acs``."""
