"""State changes, one module per kind: opening an order (``opening``), a follow-up on one (``followups``),
a processing outcome (``outcomes``), a 3-D Secure step (``authentication``), settlement and expiry
(``settlement``), and the callbacks a final status queues (``outbox``).

Every function here runs inside one database transaction (a unit of work, ``storage.database``): it loads
what it acts on under the order's row lock, asks the domain for the decision, and writes every
consequence of it together (stage, ledger entries, CVV deletion, callback outbox rows, the next job).
Handlers, pages and workers call these; ``storage`` only runs the statements and ``domain`` only decides.
"""
