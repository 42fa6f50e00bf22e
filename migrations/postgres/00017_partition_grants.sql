-- A topic's partition carries the grants of task (issue 41).
--
-- taskpg sends the statements of a task's everyday life (the plain poll,
-- the completions) in round trips of its own to the topic's partition,
-- where a generic plan reads that partition alone (taskpg/partition.go).
-- A statement on task checks task's grants only; one on a partition
-- checks the partition's. So an application role with the grants of
-- docs/operating.md was refused the partitions (SQLSTATE 42501), and taskpg
-- went back to task for it, planned per call: the saving was the owner's
-- alone.
--
-- - task_topic_partition, which creates a topic's partition with the
--   rights of the role that migrated, now also grants on it what task
--   grants to every role but its owner, and does so again when a destroyed
--   topic comes back (its partition stayed).
-- - task_grant_partitions() gives every partition task's grants: this
--   migration runs it for the partitions there are, and an owner who
--   grants a role rights on task later runs it for the partitions created
--   before (until then taskpg sends that role's statements to task, as
--   before). It adds rights and takes none away.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION task_grant_partition(p_schema text, p_partition text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    grantee    text;
    privileges text;
BEGIN
    FOR grantee, privileges IN
        SELECT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END,
               string_agg(DISTINCT a.privilege_type, ', ')
        FROM pg_class AS c, aclexplode(c.relacl) AS a
        WHERE c.oid = format('%I.task', p_schema)::regclass AND a.grantee <> c.relowner
        GROUP BY a.grantee
    LOOP
        EXECUTE format('GRANT %s ON %I.%I TO %s', privileges, p_schema, p_partition, grantee);
    END LOOP;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_grant_partition(text, text) FROM PUBLIC;

-- +goose StatementBegin
CREATE FUNCTION task_grant_partitions() RETURNS integer
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    schema    text := current_schema(); -- the migration's, kept by SET search_path FROM CURRENT
    partition text;
    granted   integer := 0;
BEGIN
    FOR partition IN
        SELECT c.relname FROM pg_catalog.pg_inherits AS i JOIN pg_catalog.pg_class AS c ON c.oid = i.inhrelid
        WHERE i.inhparent = format('%I.task', schema)::regclass
    LOOP
        PERFORM task_grant_partition(schema, partition);
        granted := granted + 1;
    END LOOP;
    RETURN granted;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_grant_partitions() FROM PUBLIC;

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
        EXECUTE format('SELECT %I.task_grant_partition($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, partition;
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

SELECT task_grant_partitions();

-- +goose Down
-- The grants given stay: they are task's own.
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
DROP FUNCTION task_grant_partitions();
DROP FUNCTION task_grant_partition(text, text);
