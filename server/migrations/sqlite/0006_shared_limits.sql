-- Login throttling and the purge rate limit, kept with the rest of the state (see throttle.rs): a restart
-- forgets nothing, and the PostgreSQL store shares them between replicas the same way.

-- Failures per key (a username from an address, an address, a username) in the current window.
CREATE TABLE login_failures (
    key           TEXT PRIMARY KEY,
    failures      INTEGER NOT NULL,
    -- The key's latest attempt; the window ends WINDOW_MS after it.
    last_ms       INTEGER NOT NULL,
    -- The lock of this window was recorded in the audit log already.
    lock_reported INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX login_failures_by_last ON login_failures (last_ms);

-- Attempts reserved before their credentials are checked and not settled yet, one row each.
CREATE TABLE login_pending (
    id            INTEGER PRIMARY KEY,
    pair_key      TEXT NOT NULL,
    addr_key      TEXT NOT NULL,
    user_key      TEXT NOT NULL,
    -- An attempt never settled (its request was cancelled) stops counting then.
    expires_ms    INTEGER NOT NULL
);
CREATE INDEX login_pending_by_pair ON login_pending (pair_key);
CREATE INDEX login_pending_by_addr ON login_pending (addr_key);
CREATE INDEX login_pending_by_user ON login_pending (user_key);
CREATE INDEX login_pending_by_expiry ON login_pending (expires_ms);

-- The purge rate limit: a token bucket per customer, in thousandths of a request.
CREATE TABLE purge_buckets (
    customer_id   INTEGER PRIMARY KEY REFERENCES customers(id) ON DELETE CASCADE,
    tokens_milli  INTEGER NOT NULL,
    at_ms         INTEGER NOT NULL,
    -- Whether the latest request took a token.
    taken         INTEGER NOT NULL
);
