-- The tasks in the rarer states, by topic, state and sequence.
--
-- The dashboard lists a topic's tasks filtered by state, newest first, and
-- an operator's first look goes to the FAILED ones. Without an index the
-- page walked the primary key from the newest task down until it had
-- found a page of them: a walk over the whole partition (a million tasks)
-- when there are few or none. The index holds every state but READY
-- (task_ready and task_deferred hold those), ACTIVE (task_active) and
-- SUCCEEDED: a task that goes READY, ACTIVE, SUCCEEDED, the common life,
-- writes no entry in it, so pushing, polling and completing cost what they
-- cost before; a task that fails, is suspended, filtered, revived, expires
-- or is replaced writes one. SUCCEEDED tasks are the mass of a topic: a
-- walk of the primary key finds a page of them at once.
--
-- With the state second, a filter on one state reads that state's entries
-- in sequence order, and stops after a page. A filter on several states
-- reads their entries and sorts them, which is cheap as they are rare.
-- A query uses the index when its conditions imply the predicate: with
-- the states as constants (taskpg plans each statement for its values), or
-- with the predicate itself among its conditions (taskansi adds it).

-- +goose Up
CREATE INDEX task_rare ON task (topic, state, sequence) WHERE state IN (2, 3, 4, 5, 7, 8); -- pages by state

-- +goose Down
DROP INDEX task_rare;
