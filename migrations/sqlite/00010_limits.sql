-- Limits of Active tasks across the fleet, as on PostgreSQL (00011 there):
-- the most Active tasks of a topic (active_limit) and of one identifier in
-- it (identifier_limit), NULL for none. SQLite's single writer serializes
-- the polls: taskansi reads the topic's limits in each poll's transaction
-- and, when it has any, counts the topic's Active tasks before it takes
-- more. task_keyed serves those counts and the polls of a topic with a
-- limit per identifier, which pick their candidates identifier by
-- identifier (a loose scan of the identifiers of Ready tasks, then the
-- earliest tasks of each); it holds the Ready and Active tasks of every
-- topic, one entry each.

-- +goose Up
ALTER TABLE task_topic ADD COLUMN active_limit INTEGER CHECK (active_limit > 0);
ALTER TABLE task_topic ADD COLUMN identifier_limit INTEGER CHECK (identifier_limit > 0);
CREATE INDEX task_keyed ON task (topic, state, identifier, sequence) WHERE state IN (0, 1);

-- +goose Down
DROP INDEX task_keyed;
ALTER TABLE task_topic DROP COLUMN identifier_limit;
ALTER TABLE task_topic DROP COLUMN active_limit;
