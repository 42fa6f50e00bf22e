-- Indexes shaped so that the hot statements (push, poll, complete) get the
-- same fast plan whatever the planner's statistics say, and that each row
-- version writes fewer index entries.
--
-- Inside a partition every row has the same topic, so an index that leads
-- with topic is no narrower than a scan of the whole partition. Without
-- statistics (a new topic, a bulk load) PostgreSQL nevertheless estimates
-- "topic = $1" at a few rows and picks such an index, walking the whole
-- partition for every poll and every completion. Hence:
--
-- - the primary key leads with sequence, so that tasks named by sequence are
--   found by sequence;
-- - the ready index holds (topic, sequence): the one index that matches both
--   conditions of a poll and yields its order, so that a poll never sorts
--   the backlog;
-- - creation times use a BRIN index: times grow with the physical order of
--   the rows, and a BRIN index costs next to nothing per row version, where
--   a B-tree wrote an entry on every push, poll and completion.

-- +goose Up
ALTER TABLE task DROP CONSTRAINT task_pkey;
ALTER TABLE task ADD PRIMARY KEY (sequence, topic);

DROP INDEX task_ready;
CREATE INDEX task_ready ON task (topic, sequence) WHERE state = 1; -- polling

DROP INDEX task_created;
CREATE INDEX task_created ON task USING brin (created); -- resolve

-- Building an index records the size of its table but no statistics of its
-- columns, a mix on which the planner sorts whole partitions to poll; take
-- fresh statistics of the partitions that exist.
ANALYZE task;

-- +goose Down
DROP INDEX task_created;
CREATE INDEX task_created ON task (created);

DROP INDEX task_ready;
CREATE INDEX task_ready ON task (sequence) WHERE state = 1;

ALTER TABLE task DROP CONSTRAINT task_pkey;
ALTER TABLE task ADD PRIMARY KEY (topic, sequence);
