-- Host patterns belong to one property, and so to one customer: a customer purges only hosts it claims, and no
-- other customer may claim the same pattern or one that overlaps it (`*.example.com` and `a.example.com`). The
-- claims are written in the transaction that stores a configuration, under one advisory lock; the primary key
-- makes a pattern one property's.
CREATE TABLE host_claims (
    pattern       TEXT PRIMARY KEY,
    customer_id   BIGINT NOT NULL REFERENCES customers(id) ON DELETE CASCADE,
    property_id   BIGINT NOT NULL REFERENCES properties(id) ON DELETE CASCADE
);
CREATE INDEX host_claims_by_property ON host_claims (property_id);
CREATE INDEX host_claims_by_customer ON host_claims (customer_id);

-- The patterns of the current configurations (as SQLite's migration 0007 does). A pattern that two properties
-- list goes to the older property; the other keeps it in its configuration without the claim.
INSERT INTO host_claims (pattern, customer_id, property_id)
SELECT DISTINCT ON (h.node ->> 'pattern') h.node ->> 'pattern', p.customer_id, p.id
FROM properties p
JOIN property_versions v ON v.property_id = p.id AND v.version = p.version
CROSS JOIN LATERAL jsonb_array_elements(
    CASE jsonb_typeof(v.config::jsonb -> 'host_patterns') WHEN 'array' THEN v.config::jsonb -> 'host_patterns'
    ELSE '[]'::jsonb END
) AS h (node)
WHERE jsonb_typeof(h.node -> 'pattern') = 'string'
ORDER BY h.node ->> 'pattern', p.id;
