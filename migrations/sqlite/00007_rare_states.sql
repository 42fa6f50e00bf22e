-- The tasks in the rarer states, by topic, state and sequence: the index of
-- the dashboard's pages filtered by state (see
-- migrations/postgres/00008_rare_states.sql). SQLite uses a partial index
-- only for a query that states its predicate in the same words, which
-- taskansi adds to a filter on these states.

-- +goose Up
CREATE INDEX task_rare ON task (topic, state, sequence) WHERE state IN (2, 3, 4, 5, 7, 8); -- pages by state

-- +goose Down
DROP INDEX task_rare;
