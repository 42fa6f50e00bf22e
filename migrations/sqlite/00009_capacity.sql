-- The capacity of topics, as on PostgreSQL (00010 there): the most Ready
-- tasks (deferred ones included) that a push may leave in a topic, NULL for
-- none. SQLite needs nothing more: its single writer serializes the pushes,
-- and taskansi counts the topic's Ready tasks after each push into a topic
-- with a capacity, in the push's transaction, refusing it when they are
-- over.

-- +goose Up
ALTER TABLE task_topic ADD COLUMN capacity INTEGER CHECK (capacity > 0);

-- +goose Down
ALTER TABLE task_topic DROP COLUMN capacity;
