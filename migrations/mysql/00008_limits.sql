-- Limits of Active tasks across the fleet, as on PostgreSQL (00011 there):
-- the most Active tasks of a topic (active_limit) and of one identifier in
-- it (identifier_limit), NULL for none. taskansi reads the topic's limits in
-- each poll's transaction; the polls of a topic with limits take turns on
-- the topic's row of task_lock (as conditional polls do) and count the
-- topic's Active tasks before they take more. The CHECKs are named, so that
-- Down drops them before their columns.
--
-- task_keyed (MySQL has no partial indexes) serves those counts and the
-- polls of a topic with a limit per identifier, which pick their
-- candidates identifier by identifier (a loose scan of the identifiers of
-- Ready tasks, then the earliest tasks of each), never walking over the
-- tasks of an identifier at its limit. It costs every task of every topic
-- one more index entry, moved by each change of state.

-- +goose Up
ALTER TABLE task_topic
    ADD COLUMN active_limit BIGINT,
    ADD COLUMN identifier_limit BIGINT,
    ADD CONSTRAINT task_topic_active_limit CHECK (active_limit > 0),
    ADD CONSTRAINT task_topic_identifier_limit CHECK (identifier_limit > 0);
ALTER TABLE task ADD KEY task_keyed (topic, state, identifier, sequence);

-- +goose Down
ALTER TABLE task DROP KEY task_keyed;
ALTER TABLE task_topic
    DROP CONSTRAINT task_topic_identifier_limit,
    DROP CONSTRAINT task_topic_active_limit,
    DROP COLUMN identifier_limit,
    DROP COLUMN active_limit;
