-- The capacity of topics, as on PostgreSQL (00010 there): the most Ready
-- tasks (deferred ones included) that a push may leave in a topic, NULL for
-- none. Pushes into a topic with a capacity take turns on the topic's row
-- (taskansi locks it FOR UPDATE), and each counts the topic's Ready tasks
-- after its insert, in its transaction, refusing the push when they are
-- over: the turns make the count exact, with no table of allowances. MySQL
-- enforces the CHECK from 8.0.16 on, MariaDB from 10.2; it is named,
-- so that Down drops it before the column, which MySQL requires.

-- +goose Up
ALTER TABLE task_topic
    ADD COLUMN capacity BIGINT,
    ADD CONSTRAINT task_topic_capacity CHECK (capacity > 0);

-- +goose Down
ALTER TABLE task_topic DROP CONSTRAINT task_topic_capacity, DROP COLUMN capacity;
