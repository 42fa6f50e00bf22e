-- The capacity of each identifier of a topic, as on PostgreSQL (00016
-- there): the most Ready tasks (deferred ones included) of any one
-- identifier of a topic, NULL for none. A topic that bounds only its
-- identifiers has the largest BIGINT as its capacity, so that its pushes
-- take turns on the topic's row as those of a topic with a capacity do
-- (00007); under that turn taskansi counts, after the insert, the Ready
-- tasks of each identifier of the push, through the range of the
-- identifier in task_identifier (topic, identifier, sequence), and refuses
-- the push when one is over. Named constraints, so that Down drops them
-- before the column, which MySQL requires.

-- +goose Up
ALTER TABLE task_topic
    ADD COLUMN identifier_capacity BIGINT,
    ADD CONSTRAINT task_topic_identifier_capacity CHECK (identifier_capacity > 0),
    ADD CONSTRAINT task_topic_identifier_admitted CHECK (identifier_capacity IS NULL OR capacity IS NOT NULL);

-- +goose Down
UPDATE task_topic SET capacity = NULL WHERE capacity = 9223372036854775807;
ALTER TABLE task_topic
    DROP CONSTRAINT task_topic_identifier_admitted,
    DROP CONSTRAINT task_topic_identifier_capacity,
    DROP COLUMN identifier_capacity;
