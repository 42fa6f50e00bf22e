-- Deferred tasks and the count of revivals, as on PostgreSQL (00005 there):
-- not_before (text in UTC with six fractional digits, NULL when never
-- deferred) and revivals. The ready index holds only the tasks never
-- deferred and a second one the deferred Ready tasks by time, so that a poll
-- never walks over the tasks that are not yet due.

-- +goose Up
ALTER TABLE task ADD COLUMN not_before TEXT;
ALTER TABLE task ADD COLUMN revivals INTEGER NOT NULL DEFAULT 0 CHECK (revivals >= 0);

DROP INDEX task_ready;
CREATE INDEX task_ready    ON task (topic, sequence) WHERE state = 1 AND not_before IS NULL;             -- polling
CREATE INDEX task_deferred ON task (topic, not_before, sequence) WHERE state = 1 AND not_before IS NOT NULL; -- polling due tasks

DROP VIEW task_pretty;
CREATE VIEW task_pretty AS
SELECT topic, sequence, identifier,
       CASE state WHEN 0 THEN 'ACTIVE' WHEN 1 THEN 'READY' WHEN 2 THEN 'EXPIRED'
                  WHEN 3 THEN 'FAILED' WHEN 4 THEN 'SUSPENDED' WHEN 5 THEN 'FILTERED'
                  WHEN 6 THEN 'SUCCEEDED' WHEN 7 THEN 'RECREATED' WHEN 8 THEN 'REDUNDANT' END AS state,
       CASE descent WHEN 0 THEN 'ACTIVE' WHEN 1 THEN 'READY' WHEN 2 THEN 'EXPIRED'
                    WHEN 3 THEN 'FAILED' WHEN 4 THEN 'SUSPENDED' WHEN 5 THEN 'FILTERED'
                    WHEN 6 THEN 'SUCCEEDED' WHEN 7 THEN 'RECREATED' WHEN 8 THEN 'REDUNDANT' END AS descent,
       owner, reference, created, completed, input, output, not_before, revivals
FROM task;

-- +goose Down
DROP VIEW task_pretty;
CREATE VIEW task_pretty AS
SELECT topic, sequence, identifier,
       CASE state WHEN 0 THEN 'ACTIVE' WHEN 1 THEN 'READY' WHEN 2 THEN 'EXPIRED'
                  WHEN 3 THEN 'FAILED' WHEN 4 THEN 'SUSPENDED' WHEN 5 THEN 'FILTERED'
                  WHEN 6 THEN 'SUCCEEDED' WHEN 7 THEN 'RECREATED' WHEN 8 THEN 'REDUNDANT' END AS state,
       CASE descent WHEN 0 THEN 'ACTIVE' WHEN 1 THEN 'READY' WHEN 2 THEN 'EXPIRED'
                    WHEN 3 THEN 'FAILED' WHEN 4 THEN 'SUSPENDED' WHEN 5 THEN 'FILTERED'
                    WHEN 6 THEN 'SUCCEEDED' WHEN 7 THEN 'RECREATED' WHEN 8 THEN 'REDUNDANT' END AS descent,
       owner, reference, created, completed, input, output
FROM task;

DROP INDEX task_deferred;
DROP INDEX task_ready;
CREATE INDEX task_ready ON task (topic, sequence) WHERE state = 1;

ALTER TABLE task DROP COLUMN revivals;
ALTER TABLE task DROP COLUMN not_before;
