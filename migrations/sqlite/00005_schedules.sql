-- The marks of periodic schedules, as on PostgreSQL (00006 there): for each
-- named schedule of a topic, the last period for which it pushed a task,
-- text in UTC with six fractional digits (as not_before in 00004). A
-- process advances a mark by compare-and-set in the transaction that
-- pushes the period's task; SQLite's single writer makes concurrent
-- advances take turns, and the later ones find the mark moved.
--
-- Destroy deletes a topic's marks along with the topic; PurgeAll keeps
-- them. No trigger ties a mark to task_topic: a mark is kept apart from the
-- registration of its topic.

-- +goose Up
CREATE TABLE task_schedule (
    topic TEXT NOT NULL,
    name  TEXT NOT NULL,
    mark  TEXT NOT NULL,
    PRIMARY KEY (topic, name)
);

-- +goose Down
DROP TABLE task_schedule;
