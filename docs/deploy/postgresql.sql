-- Per-table autovacuum for Kassa's tables whose rows turn over (docs/deployment.md, "Autovacuum"): run once
-- on the database after `kassa db upgrade` (psql -d kassa -f postgresql.sql); table settings stay through
-- later migrations. tests/ops/test_deployment.py runs the deployment it tests with these settings.

-- The queues: every sale inserts, updates and deletes a job and its CVV, inserts and updates a callback;
-- every OAuth request inserts a nonce that the scheduler deletes five minutes later. Few rows are live at
-- any time, so the defaults (a vacuum once a fifth of the table is dead) would let the dead ones pile up
-- ahead of every claim; these vacuum after a fixed count, unthrottled (the tables are small), and keep
-- a share of each page free so that an update can stay in its page.
ALTER TABLE jobs SET (
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0, fillfactor = 70
);
ALTER TABLE transient_secrets SET (
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 1000,
    autovacuum_vacuum_cost_delay = 0
);
ALTER TABLE oauth_nonces SET (
    autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 10000,
    autovacuum_analyze_scale_factor = 0, autovacuum_analyze_threshold = 10000,
    autovacuum_vacuum_cost_delay = 0
);

-- A few rows updated all the time: each merchant's balance per currency (every sale's outcome) and the
-- scheduler's tasks (every tick of every worker process). Half of each page stays free for the next version
-- of its rows, so updates stay in the page (HOT) and the page's dead versions are pruned as it goes.
ALTER TABLE balances SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 1000, fillfactor = 50);
ALTER TABLE schedule SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 100, fillfactor = 50);

-- Callbacks stay (delivered ones too) and grow with the orders, but each is updated as it is leased and
-- delivered (1.6 updates a sale, none in place: the lease is indexed): 1% of the table, not a fifth,
-- triggers its vacuum.
ALTER TABLE callbacks SET (
    autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01, autovacuum_vacuum_cost_delay = 0
);
-- Hosted forms' and checkout pages' sessions: inserted, then marked used (never deleted by Kassa yet).
ALTER TABLE browser_sessions SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);

-- The big tables, which grow with every sale and see few updates (a transaction's stage, once a sale):
-- vacuumed and analysed after 1% of new or changed rows instead of 20%, so that their visibility maps stay
-- current (index-only scans) and a freeze never has a billion rows to catch up on.
ALTER TABLE orders SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);
ALTER TABLE transactions SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);
ALTER TABLE cards SET (autovacuum_vacuum_scale_factor = 0.01, autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);
ALTER TABLE ledger_entries SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);
ALTER TABLE callback_attempts SET (autovacuum_vacuum_insert_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.01);
