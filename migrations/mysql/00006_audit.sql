-- The audit log of operator actions, as on PostgreSQL (00009 there): who,
-- from where, what with which parameters and bound, how many it changed,
-- what it did, and when (DATETIME(6) in UTC, as not_before in 00004).
-- The AUTO_INCREMENT id orders the entries and is the cursor of the
-- pages. Text is utf8mb4, compared as stored (the log is read by id).

-- +goose Up
CREATE TABLE task_audit (
    id      BIGINT       NOT NULL AUTO_INCREMENT PRIMARY KEY,
    at      DATETIME(6)  NOT NULL,
    actor   VARCHAR(250) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    origin  VARCHAR(50)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    action  VARCHAR(50)  CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    params  MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    bound   MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL,
    changed BIGINT       NOT NULL DEFAULT 0,
    outcome MEDIUMTEXT   CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL
) ENGINE = InnoDB;

-- +goose Down
DROP TABLE task_audit;
