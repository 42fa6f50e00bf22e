-- The audit log of operator actions, as on PostgreSQL (00009 there): who,
-- from where, what with which parameters and bound, how many it changed,
-- what it did, and when (text in UTC with six fractional digits, written
-- by the process, see 00001). AUTOINCREMENT never hands out an id again,
-- so that the ids order the entries and serve as the cursor of the pages.

-- +goose Up
CREATE TABLE task_audit (
    id      INTEGER PRIMARY KEY AUTOINCREMENT,
    at      TEXT    NOT NULL,
    actor   TEXT    NOT NULL,
    origin  TEXT    NOT NULL,
    action  TEXT    NOT NULL,
    params  TEXT    NOT NULL DEFAULT '',
    bound   TEXT    NOT NULL DEFAULT '',
    changed INTEGER NOT NULL DEFAULT 0 CHECK (changed >= 0),
    outcome TEXT    NOT NULL DEFAULT ''
);

-- +goose Down
DROP TABLE task_audit;
