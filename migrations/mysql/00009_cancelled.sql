-- The state CANCELLED (9), as on PostgreSQL (00012 there): a task that an
-- operator or a service cancelled before it ran, or while it ran
-- (taskapi.Canceller). It is final, like RECREATED and REDUNDANT: never
-- polled, revived or reassigned.
--
-- - The state's CHECK takes 9; descent's stays 0..8, since a cancelled
--   task is never revived. MariaDB keeps a CHECK written beside a column
--   as a constraint of the column, named after it, which DROP CONSTRAINT
--   cannot drop: the column is defined again without it (MODIFY), and the
--   new CHECK is a constraint of the table, task_state, which Down drops by
--   its name. MySQL 8 made the CHECK of 00001 a constraint of the table
--   named task_chk_<n>, which MODIFY keeps: the statement prepared below
--   finds it by its clause and drops it (on MariaDB it finds none and does
--   nothing). Adding a CHECK copies the table on both, under a lock that
--   blocks its writers meanwhile (see docs/operating.md).
-- - MySQL has no partial indexes, so no task_rare: task_ready (topic,
--   state, sequence) serves the pages filtered by state, CANCELLED too.
-- - task_pretty names the state.

-- +goose Up
ALTER TABLE task
    MODIFY state SMALLINT NOT NULL DEFAULT 1,
    ADD CONSTRAINT task_state CHECK (state BETWEEN 0 AND 9);

SET @task_state_old = (
    SELECT MIN(c.CONSTRAINT_NAME) FROM information_schema.CHECK_CONSTRAINTS AS c
    JOIN information_schema.TABLE_CONSTRAINTS AS k
      ON k.CONSTRAINT_SCHEMA = c.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = c.CONSTRAINT_NAME
     AND k.TABLE_NAME = 'task' AND k.CONSTRAINT_TYPE = 'CHECK'
    WHERE c.CONSTRAINT_SCHEMA = DATABASE() AND LOWER(c.CHECK_CLAUSE) LIKE '%`state` between 0 and 8%');
SET @task_state_drop = IF(@task_state_old IS NULL, 'DO 0',
    CONCAT('ALTER TABLE task DROP CONSTRAINT `', REPLACE(@task_state_old, '`', '``'), '`'));
PREPARE task_state_drop FROM @task_state_drop;
EXECUTE task_state_drop;
DEALLOCATE PREPARE task_state_drop;

CREATE OR REPLACE VIEW task_pretty AS
SELECT CONVERT(topic USING utf8mb4) AS topic, sequence, CONVERT(identifier USING utf8mb4) AS identifier,
       ELT(state + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT', 'CANCELLED') AS state,
       ELT(descent + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT', 'CANCELLED') AS descent,
       CONVERT(owner USING utf8mb4) AS owner, CONVERT(reference USING utf8mb4) AS reference,
       created, completed, input, output, not_before, revivals
FROM task;

-- +goose Down
-- Cancelled tasks become FAILED, the nearest state before 9; their output
-- still says that they were cancelled. The column gets its CHECK of 00001
-- back.
UPDATE task SET state = 3 WHERE state = 9;

CREATE OR REPLACE VIEW task_pretty AS
SELECT CONVERT(topic USING utf8mb4) AS topic, sequence, CONVERT(identifier USING utf8mb4) AS identifier,
       ELT(state + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT') AS state,
       ELT(descent + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT') AS descent,
       CONVERT(owner USING utf8mb4) AS owner, CONVERT(reference USING utf8mb4) AS reference,
       created, completed, input, output, not_before, revivals
FROM task;

ALTER TABLE task
    DROP CONSTRAINT task_state,
    MODIFY state SMALLINT NOT NULL DEFAULT 1 CHECK (state BETWEEN 0 AND 8);
