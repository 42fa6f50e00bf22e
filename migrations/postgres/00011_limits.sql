-- Limits of Active tasks across the fleet: the most Active tasks of a topic
-- (task_topic.active_limit) and of one identifier in it
-- (task_topic.identifier_limit), NULL for none.
--
-- The limits are kept by the database, whoever polls:
--
-- - The partition of a topic with a limit has a trigger on the update that
--   makes a task Active (Ready to Active: a poll, and only a poll). It takes
--   the topic's limit lock (an advisory lock held until the poll's
--   transaction ends), so that the claims of one topic take turns, then
--   counts the topic's Active tasks, and those of the task's identifier, in
--   statements of their own: each sees every claim committed before, and
--   the rows this poll has claimed so far. A task that would go over a
--   limit stays Ready (the trigger skips its row) and the poll returns
--   fewer tasks. The trigger sets taskrepo.limited to 'seen:<topic>' for
--   the transaction, which tells taskpg's poll that the topic has limits.
-- - taskpg's polls of a topic it knows has limits take the limit lock
--   themselves, before the poll statement, and set taskrepo.limited to
--   'counted:<n>:<topic>': their statement, whose snapshot is taken once
--   the lock is held, counts exactly what it reads of the topic's row, the
--   Active limit (n = 1) or both limits (n = 2), and the trigger does not
--   count that again. The statement ends that trust when it is done.
-- - A topic with a limit per identifier gets an index of its Ready and
--   Active tasks by identifier (task_<md5>_keyed): it serves the counts by
--   identifier and taskpg's keyed poll, which picks its candidates by
--   identifier, so that the tasks of identifiers at their limit are never
--   walked over.
-- - Setting, changing or removing a limit (an update of task_topic) adds or
--   drops the trigger and the index, with the rights of the role that
--   migrated; destroying the topic drops its partition and both with it.

-- +goose Up
ALTER TABLE task_topic
    ADD COLUMN active_limit     bigint CHECK (active_limit > 0),
    ADD COLUMN identifier_limit bigint CHECK (identifier_limit > 0);

-- 1952543598 is the space of the limit locks (internal/lockkey). The counts
-- read the topic's partition through task, as the application role may
-- (it has no rights on the partitions themselves); EXECUTE plans them for
-- the topic, and the limit bounds the index entries they read.
-- +goose StatementBegin
CREATE FUNCTION task_limited() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    held    text := coalesce(current_setting('taskrepo.limited', true), '');
    counted boolean := held = 'counted:1:' || NEW.topic; -- the Active limit
    limits  record;
    active  bigint;
BEGIN
    IF held = 'counted:2:' || NEW.topic THEN -- both limits
        RETURN NEW;
    END IF;
    IF NOT counted THEN
        PERFORM set_config('taskrepo.limited', 'seen:' || NEW.topic, true);
    END IF;
    PERFORM pg_advisory_xact_lock(1952543598, hashtext(TG_TABLE_SCHEMA || '.' || NEW.topic));
    EXECUTE format('SELECT active_limit, identifier_limit FROM %I.task_topic WHERE topic = $1', TG_TABLE_SCHEMA)
        INTO limits USING NEW.topic;
    IF limits.active_limit IS NOT NULL AND NOT counted THEN
        EXECUTE format('SELECT count(*) FROM (SELECT FROM %I.task WHERE topic = $1 AND state = 0 LIMIT $2) AS a',
            TG_TABLE_SCHEMA) INTO active USING NEW.topic, limits.active_limit;
        IF active >= limits.active_limit THEN
            RETURN NULL;
        END IF;
    END IF;
    IF limits.identifier_limit IS NOT NULL THEN
        EXECUTE format('SELECT count(*) FROM (SELECT FROM %I.task WHERE topic = $1 AND identifier = $2 AND state = 0 LIMIT $3) AS a',
            TG_TABLE_SCHEMA) INTO active USING NEW.topic, NEW.identifier, limits.identifier_limit;
        IF active >= limits.identifier_limit THEN
            RETURN NULL;
        END IF;
    END IF;
    RETURN NEW;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION task_topic_limits() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    partition text := 'task_' || md5(NEW.topic);
BEGIN
    IF NEW.active_limit IS NULL AND NEW.identifier_limit IS NULL THEN
        EXECUTE format('DROP TRIGGER IF EXISTS task_limit ON %I.%I', TG_TABLE_SCHEMA, partition);
    ELSIF OLD.active_limit IS NULL AND OLD.identifier_limit IS NULL THEN
        EXECUTE format('CREATE TRIGGER task_limit BEFORE UPDATE OF state ON %I.%I FOR EACH ROW'
                       ' WHEN (OLD.state = 1 AND NEW.state = 0)'
                       ' EXECUTE FUNCTION %I.task_limited()', TG_TABLE_SCHEMA, partition, TG_TABLE_SCHEMA);
    END IF;
    IF NEW.identifier_limit IS NULL THEN
        EXECUTE format('DROP INDEX IF EXISTS %I.%I', TG_TABLE_SCHEMA, partition || '_keyed');
    ELSIF OLD.identifier_limit IS NULL THEN
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (identifier, state, sequence) WHERE state <= 1',
            partition || '_keyed', TG_TABLE_SCHEMA, partition);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER task_topic_limits AFTER UPDATE OF active_limit, identifier_limit ON task_topic
    FOR EACH ROW WHEN (OLD.active_limit IS DISTINCT FROM NEW.active_limit
                       OR OLD.identifier_limit IS DISTINCT FROM NEW.identifier_limit)
    EXECUTE FUNCTION task_topic_limits();

-- +goose Down
DROP TRIGGER task_topic_limits ON task_topic;
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT topic FROM task_topic WHERE active_limit IS NOT NULL OR identifier_limit IS NOT NULL LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS task_limit ON %I', 'task_' || md5(t));
        EXECUTE format('DROP INDEX IF EXISTS %I', 'task_' || md5(t) || '_keyed');
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP FUNCTION task_topic_limits();
DROP FUNCTION task_limited();
ALTER TABLE task_topic DROP COLUMN identifier_limit, DROP COLUMN active_limit;
