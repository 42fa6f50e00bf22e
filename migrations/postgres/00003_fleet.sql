-- What a fleet of processes and an application role need from the schema.
--
-- - Times record the moment of the statement that writes them, not the start
--   of the caller's transaction. ONLY: the default of the parent is the one
--   that inserts through it use, and changing the parent alone locks no
--   partition.
-- - task_owner.incarnation names the repository value that registered an
--   owner last; a new one registering the name takes over what the old one
--   held (Register expires it).
-- - task_hold records, for each owner, the topics in which it may hold
--   Active tasks (a poll adds the pair in its own statement). Expire,
--   PurgeOwners and Register visit those topics only, so that their cost and
--   their locks follow the work, not the number of topics.
-- - Topics get and lose their partitions without an exclusive lock on task:
--   a new partition is created apart and attached (SHARE UPDATE EXCLUSIVE on
--   task, which polls and pushes do not conflict with); a destroyed topic's
--   partition is truncated and refuses new rows (CHECK (false)), and comes
--   back if the topic does. Detaching or dropping it would take ACCESS
--   EXCLUSIVE on task.
-- - The functions that change the schema run with the rights of the role
--   that migrated (SECURITY DEFINER), so that an application role with DML
--   rights only can create, destroy and purge topics and refresh statistics.
--   They qualify every table: the trigger with its table's schema, the others
--   with the schema of the migration's search_path, which they keep.
--
-- The migration runs outside a transaction so that filling task_hold can
-- commit every hundred topics: reading every partition in one transaction
-- would take more locks than a default server has with thousands of topics.
-- Every statement can run twice.

-- +goose NO TRANSACTION
-- +goose Up
ALTER TABLE ONLY task ALTER COLUMN created SET DEFAULT (statement_timestamp() AT TIME ZONE 'utc');
ALTER TABLE task_owner ALTER COLUMN heartbeat SET DEFAULT (statement_timestamp() AT TIME ZONE 'utc');
ALTER TABLE task_owner ADD COLUMN IF NOT EXISTS incarnation varchar(64);

CREATE TABLE IF NOT EXISTS task_hold (
    owner varchar(250) NOT NULL,
    topic varchar(250) NOT NULL,
    PRIMARY KEY (owner, topic)
);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_topic_partition() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    topic     text := CASE TG_OP WHEN 'INSERT' THEN NEW.topic ELSE OLD.topic END;
    partition text := 'task_' || md5(topic);
BEGIN
    IF TG_OP = 'INSERT' THEN
        IF to_regclass(format('%I.%I', TG_TABLE_SCHEMA, partition)) IS NULL THEN
            EXECUTE format('CREATE TABLE %I.%I (LIKE %I.task INCLUDING DEFAULTS INCLUDING CONSTRAINTS)',
                TG_TABLE_SCHEMA, partition, TG_TABLE_SCHEMA);
            EXECUTE format('ALTER TABLE %I.task ATTACH PARTITION %I.%I FOR VALUES IN (%L)',
                TG_TABLE_SCHEMA, TG_TABLE_SCHEMA, partition, topic);
        ELSE
            EXECUTE format('ALTER TABLE %I.%I DROP CONSTRAINT IF EXISTS task_destroyed', TG_TABLE_SCHEMA, partition);
        END IF;
        RETURN NEW;
    END IF;
    IF to_regclass(format('%I.%I', TG_TABLE_SCHEMA, partition)) IS NOT NULL THEN
        EXECUTE format('TRUNCATE %I.%I', TG_TABLE_SCHEMA, partition);
        EXECUTE format('ALTER TABLE %I.%I ADD CONSTRAINT task_destroyed CHECK (false) NOT VALID',
            TG_TABLE_SCHEMA, partition);
    END IF;
    EXECUTE format('DELETE FROM %I.task_hold WHERE topic = $1', TG_TABLE_SCHEMA) USING topic;
    RETURN OLD;
END
$$;
-- +goose StatementEnd

-- PurgeAll: truncates the partition of a registered topic, which stays
-- registered meanwhile (the row lock keeps a Destroy out).
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_truncate(topic text) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    schema text := current_schema(); -- the migration's, kept by SET search_path FROM CURRENT
    found  integer;
BEGIN
    EXECUTE format('SELECT FROM %I.task_topic WHERE topic = $1 FOR KEY SHARE', schema) USING topic;
    GET DIAGNOSTICS found = ROW_COUNT; -- EXECUTE leaves FOUND as it was
    IF found = 0 THEN
        RETURN false;
    END IF;
    EXECUTE format('TRUNCATE %I.%I', schema, 'task_' || md5(topic));
    RETURN true;
END
$$;
-- +goose StatementEnd

-- Refresh: gathers the statistics of the partitions of the given topics.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_analyze(topics text[]) RETURNS integer
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    schema text := current_schema(); -- the migration's, kept by SET search_path FROM CURRENT
    topic    text;
    analyzed integer := 0;
BEGIN
    FOREACH topic IN ARRAY topics LOOP
        IF to_regclass(format('%I.%I', schema, 'task_' || md5(topic))) IS NOT NULL THEN
            EXECUTE format('ANALYZE %I.%I', schema, 'task_' || md5(topic));
            analyzed := analyzed + 1;
        END IF;
    END LOOP;
    RETURN analyzed;
END
$$;
-- +goose StatementEnd

REVOKE ALL ON FUNCTION task_truncate(text) FROM PUBLIC;
REVOKE ALL ON FUNCTION task_analyze(text[]) FROM PUBLIC;

-- The owners of the Active tasks there are now, a hundred topics at a time.
-- +goose StatementBegin
DO $$
DECLARE
    topic text;
    n     integer := 0;
BEGIN
    FOR topic IN SELECT t.topic FROM task_topic AS t ORDER BY t.topic LOOP
        EXECUTE format('INSERT INTO task_hold (owner, topic) SELECT DISTINCT owner, $1 FROM %I WHERE state = 0 AND owner IS NOT NULL ON CONFLICT DO NOTHING',
            'task_' || md5(topic)) USING topic;
        n := n + 1;
        IF n % 100 = 0 THEN
            COMMIT;
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_topic_partition() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER AS $$
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

-- The partitions of destroyed topics go (with ACCESS EXCLUSIVE on task).
-- +goose StatementBegin
DO $$
DECLARE
    partition regclass;
BEGIN
    FOR partition IN SELECT c.conrelid::regclass FROM pg_catalog.pg_constraint AS c
                     WHERE c.conname = 'task_destroyed' AND c.conrelid IN (SELECT inhrelid FROM pg_catalog.pg_inherits
                                                                           WHERE inhparent = 'task'::regclass) LOOP
        EXECUTE format('DROP TABLE %s', partition);
    END LOOP;
END
$$;
-- +goose StatementEnd

DROP FUNCTION IF EXISTS task_analyze(text[]);
DROP FUNCTION IF EXISTS task_truncate(text);
DROP TABLE IF EXISTS task_hold;
ALTER TABLE task_owner DROP COLUMN IF EXISTS incarnation;
ALTER TABLE task_owner ALTER COLUMN heartbeat SET DEFAULT (now() AT TIME ZONE 'utc');
ALTER TABLE ONLY task ALTER COLUMN created SET DEFAULT (now() AT TIME ZONE 'utc');
