-- Alerting (issue 24): rules with their evaluation state, channels, silences, the events of the rules' states,
-- the deliveries of their notifications (the outbox that senders claim, and each channel's delivery log), and
-- the round of evaluation that one replica at a time claims.

-- A rule: its definition (the JSON of POST /alerts/rules) and where it stands. `evaluated_ms` is the round that
-- last evaluated it: an evaluation is written only if it is still the one read (compare-and-swap), so two
-- replicas never both act on one round.
CREATE TABLE alert_rules (
    id           TEXT PRIMARY KEY,
    customer_id  INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    definition   TEXT NOT NULL,
    enabled      BOOLEAN NOT NULL,
    created_ms   INTEGER NOT NULL,
    modified_ms  INTEGER NOT NULL,
    author       TEXT NOT NULL,
    -- ok, pending, firing or resolved; the rest of the state (since, value, group, error, last notification,
    -- an audit rule's cursor) is the JSON in `status`.
    state        TEXT NOT NULL,
    status       TEXT NOT NULL,
    evaluated_ms INTEGER NOT NULL
);
CREATE INDEX alert_rules_by_customer ON alert_rules (customer_id, name);

-- A channel: e-mail addresses or a webhook URL with its signing secret (needed to sign: kept as it is, like
-- two-factor secrets; never shown after the answer that made it).
CREATE TABLE alert_channels (
    id           TEXT PRIMARY KEY,
    customer_id  INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    name         TEXT NOT NULL,
    kind         TEXT NOT NULL,
    addresses    TEXT NOT NULL,
    url          TEXT,
    secret       TEXT,
    created_ms   INTEGER NOT NULL,
    modified_ms  INTEGER NOT NULL
);
CREATE INDEX alert_channels_by_customer ON alert_channels (customer_id, name);

-- A silence: by rule and/or labels (JSON), one window or a repeating one.
CREATE TABLE alert_silences (
    id              TEXT PRIMARY KEY,
    customer_id     INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    comment         TEXT NOT NULL,
    rule_id         TEXT,
    labels          TEXT NOT NULL,
    starts_ms       INTEGER NOT NULL,
    ends_ms         INTEGER NOT NULL,
    repeat          TEXT,
    repeat_until_ms INTEGER,
    -- When no window of it lies ahead any more (for ever: NULL).
    expires_ms      INTEGER,
    created_ms      INTEGER NOT NULL,
    author          TEXT NOT NULL
);
CREATE INDEX alert_silences_by_customer ON alert_silences (customer_id, created_ms);

-- A rule's change of state with what caused it (JSON details), kept EVENT_RETENTION_DAYS.
CREATE TABLE alert_events (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT NOT NULL UNIQUE,
    customer_id  INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    rule_id      TEXT NOT NULL,
    rule_name    TEXT NOT NULL,
    severity     TEXT NOT NULL,
    time_ms      INTEGER NOT NULL,
    from_state   TEXT NOT NULL,
    to_state     TEXT NOT NULL,
    value        TEXT,
    silenced     BOOLEAN NOT NULL,
    details      TEXT NOT NULL
);
CREATE INDEX alert_events_by_customer ON alert_events (customer_id, time_ms);
CREATE INDEX alert_events_by_time ON alert_events (time_ms);

-- A notification to one channel: pending until a sender claims it (`lease_ms`: another sender may take it
-- over once that passes), then sent, failed or, when a silence matched, silenced from the start. The body is
-- made when the notification is, so every retry sends the same bytes.
CREATE TABLE alert_deliveries (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT,
    id               TEXT NOT NULL UNIQUE,
    customer_id      INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    channel_id       TEXT NOT NULL REFERENCES alert_channels(id) ON DELETE CASCADE,
    rule_id          TEXT,
    rule_name        TEXT NOT NULL,
    kind             TEXT NOT NULL,
    created_ms       INTEGER NOT NULL,
    status           TEXT NOT NULL,
    attempts         INTEGER NOT NULL,
    next_attempt_ms  INTEGER NOT NULL,
    lease_ms         INTEGER NOT NULL,
    response_status  INTEGER,
    error            TEXT,
    sent_ms          INTEGER,
    payload          TEXT NOT NULL
);
CREATE INDEX alert_deliveries_by_channel ON alert_deliveries (channel_id, created_ms);
CREATE INDEX alert_deliveries_due ON alert_deliveries (status, next_attempt_ms);

-- The round of evaluation last claimed, by which server: each round is evaluated by the one replica that
-- moved `round_ms` forward.
CREATE TABLE alert_rounds (
    name      TEXT PRIMARY KEY,
    round_ms  INTEGER NOT NULL,
    server    TEXT NOT NULL
);
