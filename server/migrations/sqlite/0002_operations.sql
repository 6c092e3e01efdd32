-- Tasks, property configurations with their history, purge transactions and network lists.

-- Long-running changes. Progress is derived from the edge fleet's acknowledgement schedule of the task
-- (see fleet.rs); what is stored is what stays fixed: who, what, when it began and when it will end or fail.
CREATE TABLE tasks (
    id            TEXT PRIMARY KEY,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    operation     TEXT NOT NULL,
    user_id       TEXT NOT NULL,
    target_id     TEXT NOT NULL,
    target_uri    TEXT NOT NULL,
    begin_ms      INTEGER NOT NULL,
    -- When the last edge node acknowledges (COMPLETED), or when the task is given up (FAILED).
    end_ms        INTEGER NOT NULL,
    -- JSON error_info when the task ends FAILED; NULL when it completes.
    error_info    TEXT
);
CREATE INDEX tasks_by_customer ON tasks (customer_id, begin_ms);

CREATE TABLE properties (
    id            INTEGER PRIMARY KEY,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    version       INTEGER NOT NULL,
    UNIQUE (customer_id, name)
);

-- Every accepted configuration, kept: the history, its authors and comments.
CREATE TABLE property_versions (
    property_id   INTEGER NOT NULL REFERENCES properties(id) ON DELETE CASCADE,
    version       INTEGER NOT NULL,
    etag          TEXT NOT NULL,
    config        TEXT NOT NULL,
    author        TEXT NOT NULL,
    created_ms    INTEGER NOT NULL,
    comment       TEXT NOT NULL,
    PRIMARY KEY (property_id, version)
);

CREATE TABLE purge_transactions (
    id            INTEGER PRIMARY KEY AUTOINCREMENT,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    task_id       TEXT NOT NULL REFERENCES tasks(id),
    action        TEXT NOT NULL,
    uri_count     INTEGER NOT NULL,
    -- The request's URI patterns, JSON.
    uris          TEXT NOT NULL,
    username      TEXT NOT NULL
);
CREATE INDEX purge_by_customer ON purge_transactions (customer_id, id);

CREATE TABLE network_lists (
    id            TEXT PRIMARY KEY,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    name          TEXT NOT NULL,
    type          TEXT NOT NULL,
    description   TEXT NOT NULL,
    deprecated    INTEGER NOT NULL DEFAULT 0,
    created_ms    INTEGER NOT NULL,
    modified_ms   INTEGER
);
CREATE INDEX network_lists_by_customer ON network_lists (customer_id, name);

CREATE TABLE network_list_entries (
    id            TEXT PRIMARY KEY,
    list_id       TEXT NOT NULL REFERENCES network_lists(id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,
    value         TEXT NOT NULL,
    added_by      TEXT NOT NULL,
    created_ms    INTEGER NOT NULL,
    UNIQUE (list_id, value)
);
CREATE INDEX entries_by_list ON network_list_entries (list_id, seq);
