-- The state CANCELLED (9), as on PostgreSQL (00012 there): a task that an
-- operator or a service cancelled before it ran, or while it ran
-- (taskapi.Canceller). It is final, like RECREATED and REDUNDANT: never
-- polled, revived or reassigned.
--
-- - The state's CHECK takes 9; descent's stays 0..8, since a cancelled
--   task is never revived. SQLite cannot alter a CHECK, so the table is
--   built anew by the generalized ALTER TABLE procedure of sqlite.org
--   (https://www.sqlite.org/lang_altertable.html#otheralter): a new table
--   with the new CHECK, the tasks copied into it, the old one dropped and
--   the new one renamed, then every index, trigger and view of the old one
--   created again, as 00001 to 00010 left them. The trigger on task_topic
--   that deletes a destroyed topic's tasks and the view, which name the
--   table, are dropped first and created last, so that the rename meets no
--   reference to a table that is gone. The counter of AUTOINCREMENT
--   (sqlite_sequence) goes to the new table, so that no sequence is handed
--   out again, also one of a task purged. Nothing of taskrepo refers to the
--   table by a foreign key. The procedure runs in goose's transaction: the
--   write lock is held while the tasks are copied and the indexes built.
--   The simpler procedure of the same page (PRAGMA writable_schema, an
--   UPDATE of sqlite_schema) needs the schema version as a literal and is
--   refused where a connection is defensive (SQLITE_DBCONFIG_DEFENSIVE);
--   this one needs nothing but plain statements.
-- - task_rare, the index of pages filtered by state, holds CANCELLED tasks
--   too: they are rare, and an operator looks for them.
-- - task_pretty names the state.

-- +goose Up
DROP VIEW task_pretty;
DROP TRIGGER task_topic_destroy;

CREATE TABLE task_next (
    topic      TEXT    NOT NULL,
    sequence   INTEGER PRIMARY KEY AUTOINCREMENT,
    identifier TEXT    NOT NULL,
    state      INTEGER NOT NULL DEFAULT 1 CHECK (state BETWEEN 0 AND 9),
    descent    INTEGER NOT NULL DEFAULT 1 CHECK (descent BETWEEN 0 AND 8),
    owner      TEXT,
    reference  TEXT,
    created    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'),
    completed  TEXT,
    input      TEXT,
    output     TEXT,
    not_before TEXT,
    revivals   INTEGER NOT NULL DEFAULT 0 CHECK (revivals >= 0),
    UNIQUE (topic, sequence)
);
INSERT INTO task_next (topic, sequence, identifier, state, descent, owner, reference, created, completed,
                       input, output, not_before, revivals)
SELECT topic, sequence, identifier, state, descent, owner, reference, created, completed,
       input, output, not_before, revivals
FROM task;
DELETE FROM sqlite_sequence WHERE name = 'task_next';
INSERT INTO sqlite_sequence (name, seq) SELECT 'task_next', seq FROM sqlite_sequence WHERE name = 'task';
DROP TABLE task;
ALTER TABLE task_next RENAME TO task;

CREATE INDEX task_identifier ON task (topic, identifier, sequence);                  -- insertion modes, conditions, join
CREATE INDEX task_active     ON task (owner) WHERE state = 0;                        -- expiry
CREATE INDEX task_created    ON task (created);                                      -- resolve
CREATE INDEX task_reference  ON task (topic, reference, sequence) WHERE reference IS NOT NULL;
CREATE INDEX task_completed  ON task (completed) WHERE completed IS NOT NULL;        -- results
CREATE INDEX task_ready    ON task (topic, sequence) WHERE state = 1 AND not_before IS NULL;             -- polling
CREATE INDEX task_deferred ON task (topic, not_before, sequence) WHERE state = 1 AND not_before IS NOT NULL; -- polling due tasks
CREATE INDEX task_expired ON task (topic, sequence) WHERE state = 2; -- revival of expired tasks
CREATE INDEX task_rare ON task (topic, state, sequence) WHERE state IN (2, 3, 4, 5, 7, 8, 9); -- pages by state
CREATE INDEX task_keyed ON task (topic, state, identifier, sequence) WHERE state IN (0, 1);

-- +goose StatementBegin
CREATE TRIGGER task_topic_known BEFORE INSERT ON task
WHEN NOT EXISTS (SELECT 1 FROM task_topic WHERE topic = NEW.topic)
BEGIN
    SELECT RAISE(ABORT, 'taskrepo: unknown topic');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER task_topic_destroy AFTER DELETE ON task_topic
BEGIN
    DELETE FROM task WHERE topic = OLD.topic;
END;
-- +goose StatementEnd

CREATE VIEW task_pretty AS
SELECT topic, sequence, identifier,
       CASE state WHEN 0 THEN 'ACTIVE' WHEN 1 THEN 'READY' WHEN 2 THEN 'EXPIRED'
                  WHEN 3 THEN 'FAILED' WHEN 4 THEN 'SUSPENDED' WHEN 5 THEN 'FILTERED'
                  WHEN 6 THEN 'SUCCEEDED' WHEN 7 THEN 'RECREATED' WHEN 8 THEN 'REDUNDANT'
                  WHEN 9 THEN 'CANCELLED' END AS state,
       CASE descent WHEN 0 THEN 'ACTIVE' WHEN 1 THEN 'READY' WHEN 2 THEN 'EXPIRED'
                    WHEN 3 THEN 'FAILED' WHEN 4 THEN 'SUSPENDED' WHEN 5 THEN 'FILTERED'
                    WHEN 6 THEN 'SUCCEEDED' WHEN 7 THEN 'RECREATED' WHEN 8 THEN 'REDUNDANT'
                    WHEN 9 THEN 'CANCELLED' END AS descent,
       owner, reference, created, completed, input, output, not_before, revivals
FROM task;

-- +goose Down
-- Cancelled tasks become FAILED, the nearest state before 9; their output
-- still says that they were cancelled. The table is built anew as in Up,
-- with the CHECK and the task_rare of before.
UPDATE task SET state = 3 WHERE state = 9;

DROP VIEW task_pretty;
DROP TRIGGER task_topic_destroy;

CREATE TABLE task_next (
    topic      TEXT    NOT NULL,
    sequence   INTEGER PRIMARY KEY AUTOINCREMENT,
    identifier TEXT    NOT NULL,
    state      INTEGER NOT NULL DEFAULT 1 CHECK (state BETWEEN 0 AND 8),
    descent    INTEGER NOT NULL DEFAULT 1 CHECK (descent BETWEEN 0 AND 8),
    owner      TEXT,
    reference  TEXT,
    created    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000'),
    completed  TEXT,
    input      TEXT,
    output     TEXT,
    not_before TEXT,
    revivals   INTEGER NOT NULL DEFAULT 0 CHECK (revivals >= 0),
    UNIQUE (topic, sequence)
);
INSERT INTO task_next (topic, sequence, identifier, state, descent, owner, reference, created, completed,
                       input, output, not_before, revivals)
SELECT topic, sequence, identifier, state, descent, owner, reference, created, completed,
       input, output, not_before, revivals
FROM task;
DELETE FROM sqlite_sequence WHERE name = 'task_next';
INSERT INTO sqlite_sequence (name, seq) SELECT 'task_next', seq FROM sqlite_sequence WHERE name = 'task';
DROP TABLE task;
ALTER TABLE task_next RENAME TO task;

CREATE INDEX task_identifier ON task (topic, identifier, sequence);                  -- insertion modes, conditions, join
CREATE INDEX task_active     ON task (owner) WHERE state = 0;                        -- expiry
CREATE INDEX task_created    ON task (created);                                      -- resolve
CREATE INDEX task_reference  ON task (topic, reference, sequence) WHERE reference IS NOT NULL;
CREATE INDEX task_completed  ON task (completed) WHERE completed IS NOT NULL;        -- results
CREATE INDEX task_ready    ON task (topic, sequence) WHERE state = 1 AND not_before IS NULL;             -- polling
CREATE INDEX task_deferred ON task (topic, not_before, sequence) WHERE state = 1 AND not_before IS NOT NULL; -- polling due tasks
CREATE INDEX task_expired ON task (topic, sequence) WHERE state = 2; -- revival of expired tasks
CREATE INDEX task_rare ON task (topic, state, sequence) WHERE state IN (2, 3, 4, 5, 7, 8); -- pages by state
CREATE INDEX task_keyed ON task (topic, state, identifier, sequence) WHERE state IN (0, 1);

-- +goose StatementBegin
CREATE TRIGGER task_topic_known BEFORE INSERT ON task
WHEN NOT EXISTS (SELECT 1 FROM task_topic WHERE topic = NEW.topic)
BEGIN
    SELECT RAISE(ABORT, 'taskrepo: unknown topic');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER task_topic_destroy AFTER DELETE ON task_topic
BEGIN
    DELETE FROM task WHERE topic = OLD.topic;
END;
-- +goose StatementEnd

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
