-- The marks of periodic schedules (taskapi.Scheduler): for each named
-- schedule of a topic, the last period for which it pushed a task, in UTC
-- to the microsecond (timestamp, as not_before in 00005). A process that
-- runs a schedule advances its mark by compare-and-set in the transaction
-- that pushes the period's task: an UPDATE ... WHERE mark = the mark it
-- read, which READ COMMITTED checks again on the latest version once the
-- row lock is its own, or an INSERT of the first mark unless the row
-- exists. Of several processes that advance from one mark, one wins.
--
-- The table is not partitioned: it holds a row per schedule, not per task.
-- Destroy deletes a topic's marks along with the topic; PurgeAll keeps
-- them. There is no foreign key to task_topic: a mark is kept apart from
-- the registration of its topic.

-- +goose Up
CREATE TABLE task_schedule (
    topic varchar(250) NOT NULL,
    name  varchar(500) NOT NULL,
    mark  timestamp    NOT NULL,
    PRIMARY KEY (topic, name)
);

-- +goose Down
DROP TABLE task_schedule;
