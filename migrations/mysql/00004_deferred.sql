-- Deferred tasks and the count of revivals, as on PostgreSQL (00005 there):
-- not_before (DATETIME(6) in UTC, NULL when never deferred) and revivals.
-- MySQL has no partial indexes: task_due leads with (topic, state,
-- not_before), so that a poll finds the never-deferred Ready tasks by
-- "not_before IS NULL" in sequence order and the due ones by a range of
-- times, without walking over those not yet due.

-- +goose Up
ALTER TABLE task
    ADD COLUMN not_before DATETIME(6),
    ADD COLUMN revivals   INT NOT NULL DEFAULT 0 CHECK (revivals >= 0),
    ADD KEY task_due (topic, state, not_before, sequence);

CREATE OR REPLACE VIEW task_pretty AS
SELECT CONVERT(topic USING utf8mb4) AS topic, sequence, CONVERT(identifier USING utf8mb4) AS identifier,
       ELT(state + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT') AS state,
       ELT(descent + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT') AS descent,
       CONVERT(owner USING utf8mb4) AS owner, CONVERT(reference USING utf8mb4) AS reference,
       created, completed, input, output, not_before, revivals
FROM task;

-- +goose Down
CREATE OR REPLACE VIEW task_pretty AS
SELECT CONVERT(topic USING utf8mb4) AS topic, sequence, CONVERT(identifier USING utf8mb4) AS identifier,
       ELT(state + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT') AS state,
       ELT(descent + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT') AS descent,
       CONVERT(owner USING utf8mb4) AS owner, CONVERT(reference USING utf8mb4) AS reference,
       created, completed, input, output
FROM task;

ALTER TABLE task DROP KEY task_due, DROP COLUMN revivals, DROP COLUMN not_before;
