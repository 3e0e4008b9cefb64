"""The seam between the gateway and acquirers (``interface``): typed requests per flow, the ``Processor`` a
connector implements and the ``Authenticator`` of 3-D Secure. The sandbox implements both
(``kassa.sandbox``); only the composition root (``kassa.runtime``) chooses which one serves."""
