-- The read-only part of every node a property's configuration ever had: a rollback to an earlier version may
-- bring back nodes removed since, with the read-only parts the server issued them, and only those.
CREATE TABLE property_nodes (
    property_id   BIGINT NOT NULL REFERENCES properties(id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    kind          TEXT NOT NULL,
    created       TEXT NOT NULL,
    author        TEXT NOT NULL,
    PRIMARY KEY (property_id, key)
);

-- The nodes of the versions stored so far (as SQLite's migration 0004 does with its JSON functions).
INSERT INTO property_nodes (property_id, key, kind, created, author)
SELECT v.property_id,
       n.node #>> '{readonly,key}',
       n.node #>> '{readonly,kind}',
       n.node #>> '{readonly,created}',
       n.node #>> '{readonly,author}'
FROM property_versions v
CROSS JOIN LATERAL (
    SELECT jsonb_array_elements(CASE jsonb_typeof(level) WHEN 'array' THEN level ELSE '[]'::jsonb END) AS node
    FROM (VALUES (v.config::jsonb #> '{host_patterns}'), (v.config::jsonb #> '{origins}'),
                 (v.config::jsonb #> '{cache_rules}'), (v.config::jsonb #> '{security,waf_rules}'),
                 (v.config::jsonb #> '{security,traffic_shaping_rules}')) AS levels (level)
) n
WHERE n.node #>> '{readonly,key}' <> ''
ON CONFLICT DO NOTHING;
