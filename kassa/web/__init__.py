"""What the merchant API (``kassa.api``) and the customer pages (``kassa.pages``) share, so neither
imports the other's internals: reading form bodies (``forms``), the gateway's public addresses and its
pages' URLs (``addresses``), and the 3-D Secure data a browser posts to the issuer (``browser_steps``)."""
