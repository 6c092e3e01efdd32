-- API tokens (issue 23): credentials for automation, each of one user, stored by the SHA-256 of its secret (the
-- secret is shown once). Deleting a user deletes its tokens; disabling one deletes them in the same transaction.
CREATE TABLE api_tokens (
    id             TEXT PRIMARY KEY,
    customer_id    INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    user_id        TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    secret_hash    TEXT NOT NULL UNIQUE,
    -- The prefix and first characters of the secret (`edge_AbCd`), to tell tokens apart.
    hint           TEXT NOT NULL,
    name           TEXT NOT NULL,
    -- Scope names separated by spaces, as OAuth writes them.
    scopes         TEXT NOT NULL,
    -- CIDR ranges separated by spaces; empty: any address.
    allowed_cidrs  TEXT NOT NULL DEFAULT '',
    expires_ms     INTEGER,
    created_ms     INTEGER NOT NULL,
    -- Recorded at most once a minute per token (see server/src/domain/tokens.rs).
    last_used_ms   INTEGER,
    last_used_from TEXT
);
CREATE INDEX api_tokens_by_user ON api_tokens (user_id);
CREATE INDEX api_tokens_by_customer ON api_tokens (customer_id, created_ms);
