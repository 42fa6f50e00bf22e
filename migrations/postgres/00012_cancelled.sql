-- The state CANCELLED (9): a task that an operator or a service cancelled
-- before it ran, or while it ran (taskapi.Canceller). It is final, like
-- RECREATED and REDUNDANT: never polled, revived or reassigned.
--
-- - The state's CHECK takes 9. PostgreSQL checks the new constraint
--   against every row, under the lock of the ALTER: a read of the whole
--   table, which blocks its writers meanwhile (see docs/operating.md).
-- - task_rare, the index of pages filtered by state, holds CANCELLED tasks
--   too: they are rare, and an operator looks for them. It is built anew
--   beside the old one, which is dropped then.
-- - task_pretty names the state.

-- +goose Up
ALTER TABLE task DROP CONSTRAINT task_state_check,
    ADD CONSTRAINT task_state_check CHECK (state BETWEEN 0 AND 9);

CREATE INDEX task_rare_next ON task (topic, state, sequence) WHERE state IN (2, 3, 4, 5, 7, 8, 9); -- pages by state
DROP INDEX task_rare;
ALTER INDEX task_rare_next RENAME TO task_rare;

CREATE OR REPLACE VIEW task_pretty AS
SELECT topic, sequence, identifier,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT', 'CANCELLED'])[state + 1] AS state,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT', 'CANCELLED'])[descent + 1] AS descent,
       owner, reference, created, completed, input, output, not_before, revivals
FROM task;

-- +goose Down
-- Cancelled tasks become FAILED, the nearest state before 9; their output
-- still says that they were cancelled.
UPDATE task SET state = 3 WHERE state = 9;

CREATE OR REPLACE VIEW task_pretty AS
SELECT topic, sequence, identifier,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT'])[state + 1] AS state,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT'])[descent + 1] AS descent,
       owner, reference, created, completed, input, output, not_before, revivals
FROM task;

CREATE INDEX task_rare_next ON task (topic, state, sequence) WHERE state IN (2, 3, 4, 5, 7, 8); -- pages by state
DROP INDEX task_rare;
ALTER INDEX task_rare_next RENAME TO task_rare;

ALTER TABLE task DROP CONSTRAINT task_state_check,
    ADD CONSTRAINT task_state_check CHECK (state BETWEEN 0 AND 8);
