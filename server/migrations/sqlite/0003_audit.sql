-- The audit log: every change of the account (written in the transaction of the change), every failed login
-- and lockout. Kept for the audit retention (--audit-retention-days), then pruned.
CREATE TABLE audit_log (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    time_ms       INTEGER NOT NULL,
    -- 'user' or 'system'; a user's id is NULL for a failed login under a username that names no one.
    actor_type    TEXT NOT NULL,
    actor_id      TEXT,
    actor_name    TEXT NOT NULL,
    -- The client's address; '' for the system.
    source        TEXT NOT NULL,
    operation     TEXT NOT NULL,
    target_type   TEXT NOT NULL,
    target_id     TEXT NOT NULL,
    -- What the target was called at the time (username, list or property name).
    target_name   TEXT NOT NULL,
    success       INTEGER NOT NULL,
    -- What changed, a JSON object.
    details       TEXT NOT NULL
);
CREATE INDEX audit_by_customer_time ON audit_log (customer_id, time_ms);
CREATE INDEX audit_by_time ON audit_log (time_ms);
