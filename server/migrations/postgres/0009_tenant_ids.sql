-- Ids that reveal nothing of other customers (issue 19): a purge transaction is numbered per customer, and an
-- audit record is named by a random id. Existing ones keep theirs: transactions their number, records their id.

-- A customer's purges are numbered 1, 2, 3, … from its own counter. Existing customers go on after the highest
-- transaction id ever handed out (the identity sequence remembers pruned ones too), so no old id is given again.
ALTER TABLE purge_transactions ADD COLUMN number BIGINT;
UPDATE purge_transactions SET number = id;
CREATE UNIQUE INDEX purge_by_customer_number ON purge_transactions (customer_id, number);
CREATE TABLE purge_counters (
    customer_id   BIGINT PRIMARY KEY REFERENCES customers(id) ON DELETE CASCADE,
    last          BIGINT NOT NULL
);
INSERT INTO purge_counters (customer_id, last)
SELECT c.id,
       COALESCE(pg_sequence_last_value(pg_get_serial_sequence('purge_transactions', 'id')::regclass),
                (SELECT MAX(id) FROM purge_transactions), 0)
FROM customers c;

-- The id an audit record is shown with: 16 random hex digits; existing records keep their number.
ALTER TABLE audit_log ADD COLUMN public_id TEXT;
UPDATE audit_log SET public_id = CAST(id AS TEXT);
