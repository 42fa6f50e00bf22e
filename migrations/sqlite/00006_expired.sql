-- The expired tasks, by topic and sequence: the index of the keeper's
-- revival (see migrations/postgres/00007_expired.sql). MySQL's task_ready
-- index (topic, state, sequence) serves it already.

-- +goose Up
CREATE INDEX task_expired ON task (topic, sequence) WHERE state = 2; -- revival of expired tasks

-- +goose Down
DROP INDEX task_expired;
