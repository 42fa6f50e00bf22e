-- The capacity of topics: the most Ready tasks (deferred ones included) that
-- a push may leave in a topic (task_topic.capacity, NULL for none).
--
-- Admission is exact under concurrent producers, and costs nothing to the
-- topics without a capacity:
--
-- - The push statements of taskpg insert only into a topic whose capacity is
--   NULL (their check of task_topic says so); for the others they insert
--   nothing, and taskpg pushes again through task_admit, below. Its single
--   push, which has no such check, meets a trigger of the topic's partition
--   that refuses a row unless taskrepo.admitting is set (not empty) for the
--   transaction (SQLSTATE TR002); so would any client that inserts tasks on
--   its own. taskpg's admitted pushes take their room from an allowance
--   themselves, as task_admit's first statement does, and call task_admit
--   only when none had room.
-- - task_admit runs after the insert, in the push's transaction. Its
--   statements on task_allowance and task_topic, small tables read by their
--   keys, keep their plans (force_generic_plan, whatever the session's
--   setting); its count of tasks is planned every time (EXECUTE). It takes
--   what it needs from one of the topic's allowances (task_allowance,
--   shards that concurrent pushes take in turn, SKIP LOCKED): a push holds
--   its shard until it commits, so that no two pushes spend the same
--   allowance, and up to 16 pushes of a topic admit at once; more wait for
--   a shard with room that a push holds. When no shard has enough, it locks
--   every shard, which waits for the pushes that hold one, counts the topic's Ready tasks in a statement of its own (its
--   snapshot sees every push admitted before, and this one), refuses the
--   push when they are over the capacity (SQLSTATE TR001, the capacity and
--   the count in DETAIL), and else shares what is left among the shards.
-- - An allowance only ever falls short of the true room: polls and
--   completions free room that the next count finds. What adds Ready tasks
--   outside a push (a release, a revival in place, a junction: an update
--   to Ready) empties the topic's allowances through a trigger of the
--   partition, so that the next push counts again.
-- - Setting, changing or removing a capacity (an update of
--   task_topic.capacity) adds, empties or drops the shards and the
--   partition's triggers; destroying the topic drops them too.

-- +goose Up
ALTER TABLE task_topic ADD COLUMN capacity bigint CHECK (capacity > 0);

CREATE TABLE task_allowance (
    topic     varchar(250) NOT NULL REFERENCES task_topic (topic) ON DELETE CASCADE,
    shard     smallint     NOT NULL,
    allowance bigint       NOT NULL DEFAULT 0 CHECK (allowance >= 0),
    PRIMARY KEY (topic, shard)
);

-- +goose StatementBegin
CREATE FUNCTION task_admit(p_topic text, p_pushed bigint) RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    room  bigint;
    ready bigint;
    free  bigint;
BEGIN
    UPDATE task_allowance SET allowance = allowance - p_pushed
    WHERE topic = p_topic AND shard = (
        SELECT shard FROM task_allowance WHERE topic = p_topic AND allowance >= p_pushed
        LIMIT 1 FOR UPDATE SKIP LOCKED);
    IF FOUND THEN
        RETURN true;
    END IF;
    -- Every allowance with room is held by a push under way: wait for one
    -- of them, and take from it if it still has room once that push ends
    -- (the condition is checked again on the row as it is then).
    UPDATE task_allowance SET allowance = allowance - p_pushed
    WHERE topic = p_topic AND allowance >= p_pushed AND shard = (
        SELECT shard FROM task_allowance WHERE topic = p_topic AND allowance >= p_pushed
        ORDER BY random() LIMIT 1);
    IF FOUND THEN
        RETURN true;
    END IF;
    PERFORM 1 FROM task_allowance WHERE topic = p_topic ORDER BY shard FOR UPDATE;
    -- Read once the shards are locked: a capacity set meanwhile is seen.
    SELECT capacity INTO room FROM task_topic WHERE topic = p_topic;
    IF room IS NULL THEN
        RETURN false;
    END IF;
    -- Each count matches the predicate of its index (task_ready,
    -- task_deferred); EXECUTE plans it for the topic's partition.
    EXECUTE 'SELECT (SELECT count(*) FROM task WHERE topic = $1 AND state = 1 AND not_before IS NULL)
                  + (SELECT count(*) FROM task WHERE topic = $1 AND state = 1 AND not_before IS NOT NULL)'
        INTO ready USING p_topic;
    IF ready > room THEN
        RAISE EXCEPTION 'topic % would hold % Ready tasks, over its capacity of %', p_topic, ready, room
            USING ERRCODE = 'TR001', DETAIL = room || ' ' || ready;
    END IF;
    free := room - ready;
    UPDATE task_allowance SET allowance = free / 16 + CASE WHEN shard < free % 16 THEN 1 ELSE 0 END
    WHERE topic = p_topic;
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION task_unadmitted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'topic % has a capacity: its tasks must be admitted (task_admit)', NEW.topic
        USING ERRCODE = 'TR002';
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION task_returned() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('UPDATE %I.task_allowance SET allowance = 0 WHERE topic = $1 AND allowance <> 0',
        TG_TABLE_SCHEMA) USING NEW.topic;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- The shards and the triggers follow task_topic.capacity. The triggers are
-- created and dropped with the rights of the role that migrated, as the
-- partitions are (see 00003).
-- +goose StatementBegin
CREATE FUNCTION task_topic_capacity() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    topic     text := CASE TG_OP WHEN 'DELETE' THEN OLD.topic ELSE NEW.topic END;
    capacity  bigint := CASE TG_OP WHEN 'DELETE' THEN NULL ELSE NEW.capacity END;
    partition text := 'task_' || md5(topic);
BEGIN
    IF capacity IS NULL THEN
        EXECUTE format('DROP TRIGGER IF EXISTS task_admission ON %I.%I', TG_TABLE_SCHEMA, partition);
        EXECUTE format('DROP TRIGGER IF EXISTS task_return ON %I.%I', TG_TABLE_SCHEMA, partition);
        EXECUTE format('DELETE FROM %I.task_allowance WHERE topic = $1', TG_TABLE_SCHEMA) USING topic;
    ELSIF OLD.capacity IS NULL THEN
        EXECUTE format('CREATE TRIGGER task_admission BEFORE INSERT ON %I.%I FOR EACH ROW'
                       ' WHEN (coalesce(current_setting(''taskrepo.admitting'', true), '''') = '''')'
                       ' EXECUTE FUNCTION %I.task_unadmitted()', TG_TABLE_SCHEMA, partition, TG_TABLE_SCHEMA);
        EXECUTE format('CREATE TRIGGER task_return AFTER UPDATE ON %I.%I FOR EACH ROW'
                       ' WHEN (NEW.state = 1 AND OLD.state <> 1)'
                       ' EXECUTE FUNCTION %I.task_returned()', TG_TABLE_SCHEMA, partition, TG_TABLE_SCHEMA);
        EXECUTE format('INSERT INTO %I.task_allowance (topic, shard) SELECT $1, s FROM generate_series(0, 15) AS s',
            TG_TABLE_SCHEMA) USING topic;
    ELSE
        EXECUTE format('UPDATE %I.task_allowance SET allowance = 0 WHERE topic = $1', TG_TABLE_SCHEMA) USING topic;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER task_topic_capacity AFTER UPDATE OF capacity ON task_topic
    FOR EACH ROW WHEN (OLD.capacity IS DISTINCT FROM NEW.capacity) EXECUTE FUNCTION task_topic_capacity();
CREATE TRIGGER task_topic_uncapped AFTER DELETE ON task_topic
    FOR EACH ROW WHEN (OLD.capacity IS NOT NULL) EXECUTE FUNCTION task_topic_capacity();

-- +goose Down
DROP TRIGGER task_topic_uncapped ON task_topic;
DROP TRIGGER task_topic_capacity ON task_topic;
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT topic FROM task_topic WHERE capacity IS NOT NULL LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS task_admission ON %I', 'task_' || md5(t));
        EXECUTE format('DROP TRIGGER IF EXISTS task_return ON %I', 'task_' || md5(t));
    END LOOP;
END
$$;
-- +goose StatementEnd
DROP FUNCTION task_topic_capacity();
DROP FUNCTION task_returned();
DROP FUNCTION task_unadmitted();
DROP FUNCTION task_admit(text, bigint);
DROP TABLE task_allowance;
ALTER TABLE task_topic DROP COLUMN capacity;
