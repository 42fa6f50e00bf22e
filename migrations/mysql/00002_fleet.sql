-- What a fleet of processes needs from the schema on MySQL and MariaDB.
--
-- - task_owner.incarnation names the repository value that registered an
--   owner last; a new one registering the name takes over what the old one
--   held (Register expires it).
-- - task_lock holds rows that calls lock instead of rows of task_topic,
--   whose shared locks every insert takes (the foreign key): buckets
--   0..4095 serialize pushes that mark or delete older tasks of the same
--   identifiers (Replace, Supersede, Delete), buckets 4096..8191 the
--   conditional polls of a topic. A bucket is a hash of the topic (and
--   identifier), so unrelated names rarely share one; when they do, they
--   take turns.

-- +goose Up
ALTER TABLE task_owner ADD COLUMN incarnation VARBINARY(64);

CREATE TABLE task_lock (
    bucket INT NOT NULL PRIMARY KEY
) ENGINE = InnoDB;

INSERT INTO task_lock (bucket)
SELECT a.n + 16 * b.n + 256 * c.n + 4096 * d.n
FROM (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5
      UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9 UNION ALL SELECT 10
      UNION ALL SELECT 11 UNION ALL SELECT 12 UNION ALL SELECT 13 UNION ALL SELECT 14 UNION ALL SELECT 15) AS a,
     (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5
      UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9 UNION ALL SELECT 10
      UNION ALL SELECT 11 UNION ALL SELECT 12 UNION ALL SELECT 13 UNION ALL SELECT 14 UNION ALL SELECT 15) AS b,
     (SELECT 0 AS n UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4 UNION ALL SELECT 5
      UNION ALL SELECT 6 UNION ALL SELECT 7 UNION ALL SELECT 8 UNION ALL SELECT 9 UNION ALL SELECT 10
      UNION ALL SELECT 11 UNION ALL SELECT 12 UNION ALL SELECT 13 UNION ALL SELECT 14 UNION ALL SELECT 15) AS c,
     (SELECT 0 AS n UNION ALL SELECT 1) AS d;

-- +goose Down
DROP TABLE task_lock;
ALTER TABLE task_owner DROP COLUMN incarnation;
