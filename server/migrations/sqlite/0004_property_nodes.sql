-- The read-only part of every node a property's configuration ever had: a rollback to an earlier version may
-- bring back nodes removed since, with the read-only parts the server issued them, and only those.
CREATE TABLE property_nodes (
    property_id   INTEGER NOT NULL REFERENCES properties(id) ON DELETE CASCADE,
    key           TEXT NOT NULL,
    kind          TEXT NOT NULL,
    created       TEXT NOT NULL,
    author        TEXT NOT NULL,
    PRIMARY KEY (property_id, key)
);

-- The nodes of the versions stored so far.
INSERT OR IGNORE INTO property_nodes (property_id, key, kind, created, author)
SELECT v.property_id,
       json_extract(n.value, '$.readonly.key'),
       json_extract(n.value, '$.readonly.kind'),
       json_extract(n.value, '$.readonly.created'),
       json_extract(n.value, '$.readonly.author')
FROM property_versions v,
     (SELECT '$.host_patterns' AS path UNION ALL SELECT '$.origins' UNION ALL SELECT '$.cache_rules'
      UNION ALL SELECT '$.security.waf_rules' UNION ALL SELECT '$.security.traffic_shaping_rules') levels,
     json_each(v.config, levels.path) n
WHERE json_extract(n.value, '$.readonly.key') <> '';
