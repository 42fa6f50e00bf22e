-- The task repository on MySQL 8 and MariaDB 10.6 or newer: the tables,
-- indexes and view of the PostgreSQL schema.
--
-- Names (topic, owner, identifier, reference) are VARBINARY: their limits
-- count bytes, as taskrepo's do, and they compare byte by byte, without the
-- case folding or trailing-space padding of the text collations. Input and
-- output are LONGTEXT (up to 4 GiB; a row must still fit max_allowed_packet).
-- Times are DATETIME(6) in UTC. There are no partitions: one task table holds
-- every topic; the foreign key refuses tasks of unknown topics and deletes a
-- destroyed topic's tasks, as the partitions do on PostgreSQL.

-- +goose Up
CREATE TABLE task_owner (
    owner     VARBINARY(250) NOT NULL PRIMARY KEY,
    heartbeat DATETIME(6)    NOT NULL DEFAULT (UTC_TIMESTAMP(6))
) ENGINE = InnoDB;

CREATE TABLE task_topic (
    topic VARBINARY(250) NOT NULL PRIMARY KEY
) ENGINE = InnoDB;

-- sequence is one AUTO_INCREMENT counter for all topics, first value 1. A
-- multi-row INSERT ... VALUES gets consecutive values.
CREATE TABLE task (
    topic      VARBINARY(250) NOT NULL,
    sequence   BIGINT         NOT NULL AUTO_INCREMENT,
    identifier VARBINARY(500) NOT NULL,
    state      SMALLINT       NOT NULL DEFAULT 1 CHECK (state BETWEEN 0 AND 8),
    descent    SMALLINT       NOT NULL DEFAULT 1 CHECK (descent BETWEEN 0 AND 8),
    owner      VARBINARY(250),
    reference  VARBINARY(500),
    created    DATETIME(6)    NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    completed  DATETIME(6),
    input      LONGTEXT CHARACTER SET utf8mb4,
    output     LONGTEXT CHARACTER SET utf8mb4,
    PRIMARY KEY (topic, sequence),
    UNIQUE KEY task_sequence (sequence),
    KEY task_ready (topic, state, sequence),          -- polling (MySQL has no partial indexes)
    KEY task_identifier (topic, identifier, sequence), -- insertion modes, conditions, join
    KEY task_active (state, owner),                    -- expiry
    KEY task_created (created),                        -- resolve
    KEY task_reference (topic, reference, sequence),
    KEY task_completed (completed),                    -- results
    CONSTRAINT task_topic_known FOREIGN KEY (topic) REFERENCES task_topic (topic) ON DELETE CASCADE
) ENGINE = InnoDB;

-- For people reading the table by hand: states by name, names as text.
CREATE VIEW task_pretty AS
SELECT CONVERT(topic USING utf8mb4) AS topic, sequence, CONVERT(identifier USING utf8mb4) AS identifier,
       ELT(state + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT') AS state,
       ELT(descent + 1, 'ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
           'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT') AS descent,
       CONVERT(owner USING utf8mb4) AS owner, CONVERT(reference USING utf8mb4) AS reference,
       created, completed, input, output
FROM task;

-- +goose Down
DROP VIEW task_pretty;
DROP TABLE task;
DROP TABLE task_topic;
DROP TABLE task_owner;
