-- What a fleet of consumers controls through the database.
--
-- - task_activation holds the activation of the topics that have one
--   (0 RUNNING, 1 PAUSED, 2 DRAINING; a topic without a row runs) and when
--   it last changed.
-- - task_leader holds the current or last term of each topic's leader: the
--   owner, the term's number, which grows with every new leader from 1, and
--   when it ends.
--
-- Both follow their topic as tasks do, by triggers (SQLite enforces foreign
-- keys only when a connection asks): no row of an unknown topic, and
-- destroying a topic deletes its rows, so that a topic initialized again
-- runs and numbers its terms from 1. Times are text in UTC with six
-- fractional digits, written by the process (see 00001).

-- +goose Up
CREATE TABLE task_activation (
    topic      TEXT    NOT NULL PRIMARY KEY,
    activation INTEGER NOT NULL CHECK (activation BETWEEN 0 AND 2),
    changed    TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%d %H:%M:%f', 'now') || '000')
);

CREATE TABLE task_leader (
    topic   TEXT    NOT NULL PRIMARY KEY,
    owner   TEXT    NOT NULL,
    term    INTEGER NOT NULL,
    expires TEXT    NOT NULL
);

-- +goose StatementBegin
CREATE TRIGGER task_activation_known BEFORE INSERT ON task_activation
WHEN NOT EXISTS (SELECT 1 FROM task_topic WHERE topic = NEW.topic)
BEGIN
    SELECT RAISE(ABORT, 'taskrepo: unknown topic');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER task_leader_known BEFORE INSERT ON task_leader
WHEN NOT EXISTS (SELECT 1 FROM task_topic WHERE topic = NEW.topic)
BEGIN
    SELECT RAISE(ABORT, 'taskrepo: unknown topic');
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER task_topic_destroy_control AFTER DELETE ON task_topic
BEGIN
    DELETE FROM task_activation WHERE topic = OLD.topic;
    DELETE FROM task_leader WHERE topic = OLD.topic;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER task_topic_destroy_control;
DROP TRIGGER task_leader_known;
DROP TRIGGER task_activation_known;
DROP TABLE task_leader;
DROP TABLE task_activation;
