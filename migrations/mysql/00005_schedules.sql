-- The marks of periodic schedules, as on PostgreSQL (00006 there): for each
-- named schedule of a topic, the last period for which it pushed a task,
-- DATETIME(6) in UTC (as not_before in 00004). Names are VARBINARY, compared
-- byte by byte, as in 00001. A process advances a mark by compare-and-set
-- in the transaction that pushes the period's task: an UPDATE ... WHERE
-- mark = the mark it read, which InnoDB checks again on the latest version
-- once the row lock is its own, or an INSERT IGNORE of the first mark. Of
-- several processes that advance from one mark, one wins.
--
-- Destroy deletes a topic's marks along with the topic; PurgeAll keeps
-- them. There is no foreign key to task_topic: a mark is kept apart from
-- the registration of its topic.

-- +goose Up
CREATE TABLE task_schedule (
    topic VARBINARY(250) NOT NULL,
    name  VARBINARY(500) NOT NULL,
    mark  DATETIME(6)    NOT NULL,
    PRIMARY KEY (topic, name)
) ENGINE = InnoDB;

-- +goose Down
DROP TABLE task_schedule;
