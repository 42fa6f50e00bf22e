-- The task repository on SQLite: the tables, indexes and view of the
-- PostgreSQL schema. SQLite has no partitions: one task table holds every
-- topic, and triggers on task_topic play the part of the partitions, so that
-- any client gets the same guarantees (no task of an unknown topic, a
-- destroyed topic takes its tasks along). Times are text in UTC with six
-- fractional digits ('2006-01-02 15:04:05.000000'), so that they sort and
-- compare as text; SQLite's clock gives milliseconds.

-- +goose Up
CREATE TABLE task_owner (
    owner     TEXT NOT NULL PRIMARY KEY,
    heartbeat TEXT NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
);

CREATE TABLE task_topic (
    topic TEXT NOT NULL PRIMARY KEY
);

-- sequence is the rowid: AUTOINCREMENT makes it one sequence for all topics
-- that never hands out a number twice, first value 1.
CREATE TABLE task (
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
    UNIQUE (topic, sequence)
);

-- Partial indexes hold only the rows they serve.
CREATE INDEX task_ready      ON task (topic, sequence) WHERE state = 1;              -- polling
CREATE INDEX task_identifier ON task (topic, identifier, sequence);                  -- insertion modes, conditions, join
CREATE INDEX task_active     ON task (owner) WHERE state = 0;                        -- expiry
CREATE INDEX task_created    ON task (created);                                      -- resolve
CREATE INDEX task_reference  ON task (topic, reference, sequence) WHERE reference IS NOT NULL;
CREATE INDEX task_completed  ON task (completed) WHERE completed IS NOT NULL;        -- results

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

-- For people reading the table by hand: states by name.
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

-- +goose Down
DROP VIEW task_pretty;
DROP TRIGGER task_topic_destroy;
DROP TRIGGER task_topic_known;
DROP TABLE task;
DROP TABLE task_topic;
DROP TABLE task_owner;
