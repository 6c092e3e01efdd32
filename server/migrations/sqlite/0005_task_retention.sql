-- Tasks are listed by what changed after a time (every such task ends after it) and pruned by their end.
CREATE INDEX tasks_by_customer_end ON tasks (customer_id, end_ms);
CREATE INDEX tasks_by_end ON tasks (end_ms);
CREATE INDEX purge_by_task ON purge_transactions (task_id);
