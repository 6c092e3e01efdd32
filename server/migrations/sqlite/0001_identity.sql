-- Customers, their users and login sessions.
CREATE TABLE customers (
    id            INTEGER PRIMARY KEY,
    name          TEXT NOT NULL UNIQUE,
    display_name  TEXT NOT NULL,
    contact_email TEXT NOT NULL DEFAULT '',
    timezone      TEXT NOT NULL DEFAULT 'UTC',
    created_ms    INTEGER NOT NULL
);

CREATE TABLE users (
    id            TEXT PRIMARY KEY,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    username      TEXT NOT NULL,
    source        TEXT NOT NULL,
    full_name     TEXT NOT NULL DEFAULT '',
    email         TEXT NOT NULL DEFAULT '',
    phone_number  TEXT NOT NULL DEFAULT '',
    enabled       INTEGER NOT NULL DEFAULT 1,
    role          TEXT NOT NULL,
    -- argon2id PHC string; NULL for remote users and after an administrator's reset.
    password_hash TEXT,
    otp_enabled   INTEGER NOT NULL DEFAULT 0,
    otp_secret    TEXT,
    -- The last time step whose code was accepted: a code is accepted at most once.
    otp_last_step INTEGER NOT NULL DEFAULT 0,
    created_ms    INTEGER NOT NULL,
    UNIQUE (customer_id, username)
);

-- Sessions are stored by the SHA-256 of their id, so the table alone does not let anyone in.
CREATE TABLE sessions (
    token_hash    TEXT PRIMARY KEY,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_ms    INTEGER NOT NULL,
    last_seen_ms  INTEGER NOT NULL
);
CREATE INDEX sessions_by_user ON sessions (user_id);
CREATE INDEX sessions_by_last_seen ON sessions (last_seen_ms);

-- Two-factor seeds handed out and not yet paired; pairing moves the secret to the user.
CREATE TABLE otp_seeds (
    id            TEXT PRIMARY KEY,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    secret        TEXT NOT NULL,
    created_ms    INTEGER NOT NULL
);
CREATE INDEX otp_seeds_by_user ON otp_seeds (user_id);

-- Password-reset links, by the SHA-256 of their token; single use.
CREATE TABLE password_resets (
    token_hash    TEXT PRIMARY KEY,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    user_id       TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    expires_ms    INTEGER NOT NULL
);
CREATE INDEX password_resets_by_user ON password_resets (user_id);

-- Identity sources other than `local` (which always exists and is not stored).
CREATE TABLE identity_sources (
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    id            TEXT NOT NULL,
    configuration TEXT NOT NULL,
    PRIMARY KEY (customer_id, id)
);
