-- Host patterns belong to one property, and so to one customer: a customer purges only hosts it claims, and no
-- other customer may claim the same pattern or one that overlaps it (`*.example.com` and `a.example.com`). The
-- claims are written in the transaction that stores a configuration; the primary key makes a pattern one
-- property's.
CREATE TABLE host_claims (
    pattern       TEXT PRIMARY KEY,
    customer_id   INTEGER NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    property_id   INTEGER NOT NULL REFERENCES properties(id) ON DELETE CASCADE
);
CREATE INDEX host_claims_by_property ON host_claims (property_id);
CREATE INDEX host_claims_by_customer ON host_claims (customer_id);

-- The patterns of the current configurations. A pattern that two properties list goes to the older property;
-- the other keeps it in its configuration without the claim (its purges of that host are refused, and its next
-- update must leave the pattern out).
INSERT OR IGNORE INTO host_claims (pattern, customer_id, property_id)
SELECT json_extract(h.value, '$.pattern'), p.customer_id, p.id
FROM properties p
JOIN property_versions v ON v.property_id = p.id AND v.version = p.version,
     json_each(v.config, '$.host_patterns') h
WHERE json_type(h.value, '$.pattern') = 'text'
ORDER BY p.id;
