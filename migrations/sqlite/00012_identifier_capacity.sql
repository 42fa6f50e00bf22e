-- The capacity of each identifier of a topic, as on PostgreSQL (00016
-- there): the most Ready tasks (deferred ones included) of any one
-- identifier of a topic, NULL for none. A topic that bounds only its
-- identifiers has the largest INTEGER as its capacity, so that its pushes
-- are admitted as those of a topic with a capacity are (00009): after the
-- insert, in the push's transaction (SQLite's single writer serializes
-- them), taskansi counts the Ready tasks of each identifier of the push,
-- through the range of the identifier in task_identifier (topic,
-- identifier, sequence), and refuses the push when one is over.

-- +goose Up
ALTER TABLE task_topic ADD COLUMN identifier_capacity INTEGER
    CHECK (identifier_capacity IS NULL OR identifier_capacity > 0 AND capacity IS NOT NULL);

-- +goose Down
UPDATE task_topic SET capacity = NULL WHERE capacity = 9223372036854775807;
ALTER TABLE task_topic DROP COLUMN identifier_capacity;
