-- What a fleet of consumers controls through the database.
--
-- - task_activation holds the activation of the topics that have one
--   (0 RUNNING, 1 PAUSED, 2 DRAINING; a topic without a row runs) and when
--   it last changed. Setting it notifies the schema's activation channel.
-- - task_leader holds the current or last term of each topic's leader: the
--   owner, the term's number, which grows with every new leader from 1, and
--   when it ends. Every decision on a term is one statement on the database
--   clock, which locks the row.
--
-- Both follow their topic: destroying it deletes its rows (ON DELETE
-- CASCADE), so that a topic initialized again runs and numbers its terms
-- from 1. Times are UTC, as everywhere.

-- +goose Up
CREATE TABLE task_activation (
    topic      varchar(250) PRIMARY KEY REFERENCES task_topic (topic) ON DELETE CASCADE,
    activation smallint     NOT NULL CHECK (activation BETWEEN 0 AND 2),
    changed    timestamp    NOT NULL DEFAULT (statement_timestamp() AT TIME ZONE 'utc')
);

CREATE TABLE task_leader (
    topic   varchar(250) PRIMARY KEY REFERENCES task_topic (topic) ON DELETE CASCADE,
    owner   varchar(250) NOT NULL,
    term    bigint       NOT NULL,
    expires timestamp    NOT NULL
);

-- +goose Down
DROP TABLE task_leader;
DROP TABLE task_activation;
