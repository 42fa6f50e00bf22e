-- The task repository: owners, topics and tasks. Every topic is a LIST
-- partition of task, created and dropped by a trigger on task_topic, so that
-- any client that inserts a topic gets its partition.

-- +goose Up
CREATE TABLE task_owner (
    owner     varchar(250) PRIMARY KEY,
    heartbeat timestamp    NOT NULL DEFAULT (now() AT TIME ZONE 'utc')
);

CREATE TABLE task_topic (
    topic varchar(250) PRIMARY KEY
);

-- One sequence for all topics: sequences increase in insertion order across
-- the whole repository, which is what Resolve and the purge by time rely on.
CREATE SEQUENCE task_sequence;

CREATE TABLE task (
    topic      varchar(250) NOT NULL,
    sequence   bigint       NOT NULL DEFAULT nextval('task_sequence'),
    identifier varchar(500) NOT NULL,
    state      smallint     NOT NULL DEFAULT 1 CHECK (state BETWEEN 0 AND 8),
    descent    smallint     NOT NULL DEFAULT 1 CHECK (descent BETWEEN 0 AND 8),
    owner      varchar(250),
    reference  varchar(500),
    created    timestamp    NOT NULL DEFAULT (now() AT TIME ZONE 'utc'),
    completed  timestamp,
    input      text,
    output     text,
    PRIMARY KEY (topic, sequence)
) PARTITION BY LIST (topic);

ALTER SEQUENCE task_sequence OWNED BY task.sequence;

-- Every index is created on each partition. The partial ones hold only the
-- rows they serve, so that most row versions write fewer index entries.
CREATE INDEX task_ready      ON task (sequence) WHERE state = 1;          -- polling
CREATE INDEX task_identifier ON task (identifier, sequence);              -- insertion modes, conditions, join
CREATE INDEX task_active     ON task (owner) WHERE state = 0;             -- expiry
CREATE INDEX task_created    ON task (created);                           -- resolve
CREATE INDEX task_reference  ON task (reference, sequence) WHERE reference IS NOT NULL;
CREATE INDEX task_completed  ON task (completed) WHERE completed IS NOT NULL; -- results

-- The partition of a topic is named after the MD5 of its name, since topics
-- may be longer than PostgreSQL's 63-byte identifiers. The objects are
-- qualified with the trigger's own schema so that a session's search_path
-- does not matter.
-- +goose StatementBegin
CREATE FUNCTION task_topic_partition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        EXECUTE format('CREATE TABLE %I.%I PARTITION OF %I.task FOR VALUES IN (%L)',
            TG_TABLE_SCHEMA, 'task_' || md5(NEW.topic), TG_TABLE_SCHEMA, NEW.topic);
        RETURN NEW;
    END IF;
    EXECUTE format('DROP TABLE IF EXISTS %I.%I', TG_TABLE_SCHEMA, 'task_' || md5(OLD.topic));
    RETURN OLD;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER task_topic_partition AFTER INSERT OR DELETE ON task_topic
    FOR EACH ROW EXECUTE FUNCTION task_topic_partition();

-- For people reading the table by hand: states by name.
CREATE VIEW task_pretty AS
SELECT topic, sequence, identifier,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT'])[state + 1] AS state,
       (ARRAY['ACTIVE', 'READY', 'EXPIRED', 'FAILED', 'SUSPENDED',
              'FILTERED', 'SUCCEEDED', 'RECREATED', 'REDUNDANT'])[descent + 1] AS descent,
       owner, reference, created, completed, input, output
FROM task;

-- +goose Down
DROP VIEW task_pretty;
DROP TABLE task_topic;
DROP FUNCTION task_topic_partition();
DROP TABLE task;
DROP TABLE task_owner;
