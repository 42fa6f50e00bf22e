-- The expired tasks, by topic and sequence.
--
-- A keeper with revival (taskproc.WithRevival) revives the Expired tasks of
-- its topics a few times a minute: without an index it walked every row of
-- each partition to find none. Expired tasks are few and short-lived, so
-- the partial index is small and costs only the rows that expire.

-- +goose Up
CREATE INDEX task_expired ON task (topic, sequence) WHERE state = 2; -- revival of expired tasks

-- +goose Down
DROP INDEX task_expired;
