-- Tasks say who started them and what they changed in words (issue 22): the user's name and the target's
-- name as they were when the task began, so that a renamed or deleted user or list still reads as it did. A
-- purge keeps its first URI patterns beside the whole request, so that a page of tasks or purges reads a few
-- patterns, not every request's (a purge may carry tens of thousands).
ALTER TABLE tasks ADD COLUMN user_name TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN target_name TEXT NOT NULL DEFAULT '';
ALTER TABLE purge_transactions ADD COLUMN sample TEXT NOT NULL DEFAULT '[]';

-- The tasks and purges stored so far: names as they are now (a deleted user or list has none), as SQLite's
-- migration 0013 does with its JSON functions.
UPDATE tasks SET user_name = COALESCE((SELECT u.username FROM users u WHERE u.id = tasks.user_id), '');
UPDATE tasks SET user_name = 'system' WHERE user_id = 'system';
UPDATE tasks SET target_name = COALESCE(
    (SELECT l.name FROM network_lists l WHERE l.id = tasks.target_id AND l.customer_id = tasks.customer_id), '')
WHERE operation = 'networklist.deploy';
UPDATE tasks SET target_name = target_id WHERE operation = 'config.deploy';
UPDATE purge_transactions SET sample = COALESCE(
    (SELECT json_agg(e.item ->> 'uri_pattern' ORDER BY e.n)::text
     FROM (SELECT item, n FROM jsonb_array_elements(purge_transactions.uris::jsonb) WITH ORDINALITY AS x (item, n)
           ORDER BY n LIMIT 3) e), '[]');
