-- The audit log of operator actions: every change made from taskctl's
-- dashboard or its commands (pause, purge, revive, ...), never a read.
-- Who acted (the dashboard session's label, or the OS user of a command),
-- from where (dashboard, cli), the action and its parameters (a JSON
-- object as text), the bound it was confirmed with, how many tasks (or
-- topics, or owners) it changed, what it said it did, and when, on the
-- database clock in UTC as everywhere.
--
-- id is an identity column: it orders the entries (newest first is id
-- descending, read backwards on the primary key) and is the cursor of the
-- pages. Identity columns need no right on their sequence, so the roles
-- that record need INSERT on the table only, and a read-only role SELECT.
-- The log is kept apart from the topics: destroying a topic keeps the
-- entries that name it.

-- +goose Up
CREATE TABLE task_audit (
    id      bigint       GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at      timestamp    NOT NULL DEFAULT (statement_timestamp() AT TIME ZONE 'utc'),
    actor   varchar(250) NOT NULL,
    origin  varchar(50)  NOT NULL,
    action  varchar(50)  NOT NULL,
    params  text         NOT NULL DEFAULT '',
    bound   text         NOT NULL DEFAULT '',
    changed bigint       NOT NULL DEFAULT 0 CHECK (changed >= 0),
    outcome text         NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE task_audit;
