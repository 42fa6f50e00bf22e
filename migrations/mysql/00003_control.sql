-- What a fleet of consumers controls through the database.
--
-- - task_activation holds the activation of the topics that have one
--   (0 RUNNING, 1 PAUSED, 2 DRAINING; a topic without a row runs) and when
--   it last changed.
-- - task_leader holds the current or last term of each topic's leader: the
--   owner, the term's number, which grows with every new leader from 1, and
--   when it ends. Every decision on a term is one statement on the database
--   clock, which locks the row.
--
-- Both follow their topic: destroying it deletes its rows (ON DELETE
-- CASCADE), so that a topic initialized again runs and numbers its terms
-- from 1. Names are VARBINARY and times DATETIME(6) in UTC, as in 00001.

-- +goose Up
CREATE TABLE task_activation (
    topic      VARBINARY(250) NOT NULL PRIMARY KEY,
    activation SMALLINT       NOT NULL CHECK (activation BETWEEN 0 AND 2),
    changed    DATETIME(6)    NOT NULL DEFAULT (UTC_TIMESTAMP(6)),
    CONSTRAINT task_activation_topic FOREIGN KEY (topic) REFERENCES task_topic (topic) ON DELETE CASCADE
) ENGINE = InnoDB;

CREATE TABLE task_leader (
    topic   VARBINARY(250) NOT NULL PRIMARY KEY,
    owner   VARBINARY(250) NOT NULL,
    term    BIGINT         NOT NULL,
    expires DATETIME(6)    NOT NULL,
    CONSTRAINT task_leader_topic FOREIGN KEY (topic) REFERENCES task_topic (topic) ON DELETE CASCADE
) ENGINE = InnoDB;

-- +goose Down
DROP TABLE task_leader;
DROP TABLE task_activation;
