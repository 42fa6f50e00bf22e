-- Deferred tasks and the count of revivals.
--
-- - not_before: a Ready task is not polled before this time (UTC); NULL for
--   a task that was never deferred. A past time is kept as given.
-- - revivals: how often the task, or the tasks it was revived from, were
--   revived.
--
-- The ready index now holds only the tasks that were never deferred, and a
-- second one the deferred Ready tasks by their time: a poll walks the first
-- in sequence order and the second up to now, so that it never walks over
-- the tasks that are not yet due, however many wait.

-- +goose Up
ALTER TABLE task
    ADD COLUMN not_before timestamp,
    ADD COLUMN revivals   integer NOT NULL DEFAULT 0 CHECK (revivals >= 0);

DROP INDEX task_ready;
CREATE INDEX task_ready    ON task (topic, sequence) WHERE state = 1 AND not_before IS NULL;             -- polling
CREATE INDEX task_deferred ON task (topic, not_before, sequence) WHERE state = 1 AND not_before IS NOT NULL; -- polling due tasks

CREATE OR REPLACE VIEW task_pretty AS
SELECT topic, sequence, identifier,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT'])[state + 1] AS state,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT'])[descent + 1] AS descent,
       owner, reference, created, completed, input, output, not_before, revivals
FROM task;

-- Fresh statistics, as 00002 takes after building indexes.
ANALYZE task;

-- +goose Down
DROP VIEW task_pretty;
CREATE VIEW task_pretty AS
SELECT topic, sequence, identifier,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT'])[state + 1] AS state,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT'])[descent + 1] AS descent,
       owner, reference, created, completed, input, output
FROM task;

DROP INDEX task_deferred;
DROP INDEX task_ready;
CREATE INDEX task_ready ON task (topic, sequence) WHERE state = 1;

ALTER TABLE task DROP COLUMN revivals, DROP COLUMN not_before;
