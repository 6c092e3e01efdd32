-- What GET /readyz writes to learn that the database takes writes (a disk that is full or read-only answers
-- reads but refuses writes): one row per server, its latest probe.
CREATE TABLE readiness_probe (
    server   TEXT PRIMARY KEY,
    probe_ms BIGINT NOT NULL
);
