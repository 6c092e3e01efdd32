-- Wrong one-time codes are counted per account too, whatever the address (see throttle.rs): a pending attempt
-- that carries a code names the account's codes' key.
ALTER TABLE login_pending ADD COLUMN code_key TEXT;
CREATE INDEX login_pending_by_code ON login_pending (code_key);
