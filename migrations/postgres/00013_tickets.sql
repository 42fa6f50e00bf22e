-- Admission by tickets: the allowances of 00010 give way to two sequences
-- per topic with a capacity, so that a push that has room updates no row.
--
-- - task_ticket_<md5 of the topic> hands out tickets, one per Ready task a
--   push stores; task_bound_<md5> holds the last ticket that still has
--   room. A push of taskpg draws its tickets in its own statement, under
--   the topic's admission lock taken shared (space 1952543599, hashtext of
--   schema.topic, internal/lockkey), and stores its tasks only when its
--   last ticket is within the bound. Sequences take no row lock and no
--   snapshot, and write to the log once every 32 values: that is what makes
--   them cheaper than a row update (see docs/tenants.md).
-- - A push whose tickets are past the bound stores nothing; taskpg ends its
--   transaction (or rolls back its savepoint, in a caller's transaction),
--   which gives the shared lock back, and pushes again, followed by
--   task_admit. task_admit takes the lock exclusively, which waits for every
--   push admitted by a ticket to end; it counts the topic's Ready tasks
--   (its own push's included), refuses the push when they are over the
--   capacity (SQLSTATE TR001, as before), and else sets the bound to the
--   tickets handed out plus the room left. taskansi calls task_take after
--   its insert, which tries the tickets first.
-- - Tickets of pushes that roll back are lost: the bound only ever falls
--   short of the true room, and the next count finds what polls and
--   completions freed. Whatever adds Ready tasks outside a push (an update
--   to Ready: task_returned) or changes the capacity moves the bound down to
--   the tickets handed out, under the lock (shared, exclusive), so that the
--   next push counts; a bound set by a count that runs meanwhile is then
--   set before.
-- - task_topic_capacity creates the sequences with the topic's first
--   capacity, with the rights of the role that migrated; the roles that may
--   insert tasks then get USAGE on the tickets and SELECT on the bound. A
--   role without them goes through task_admit (SECURITY DEFINER), which
--   needs neither. A capacity removed leaves them, spent, to be used
--   again: a push holds a sequence's lock until it ends, while it waits for
--   the partition's, so that dropping them there could deadlock with it. A
--   topic destroyed takes them along unless a push of it holds them then
--   (a lock timeout of 10 ms); they are reset when its capacity comes back.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION task_tickets_create(p_schema text, p_topic text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    tickets text := format('%I.%I', p_schema, 'task_ticket_' || md5(p_topic));
    bound   text := format('%I.%I', p_schema, 'task_bound_' || md5(p_topic));
    grantee text;
BEGIN
    -- CACHE 1: a session that cached values would hand them out of order.
    EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %s MINVALUE 0 START 0 CACHE 1', tickets);
    EXECUTE format('CREATE SEQUENCE IF NOT EXISTS %s MINVALUE 0 START 0 CACHE 1', bound);
    -- Called, so that pg_sequence_last_value reads 0 rather than NULL.
    PERFORM setval(tickets::regclass, 0), setval(bound::regclass, 0);
    FOR grantee IN
        SELECT DISTINCT CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE a.grantee::regrole::text END
        FROM pg_class AS c, aclexplode(c.relacl) AS a
        WHERE c.oid = format('%I.task', p_schema)::regclass AND a.privilege_type = 'INSERT'
    LOOP
        EXECUTE format('GRANT USAGE ON SEQUENCE %s TO %s', tickets, grantee);
        EXECUTE format('GRANT SELECT ON SEQUENCE %s TO %s', bound, grantee);
    END LOOP;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_tickets_create(text, text) FROM PUBLIC;

-- task_tickets_spent moves the bound down to the tickets handed out, so that
-- the next push counts. The caller holds the admission lock.
-- +goose StatementBegin
CREATE FUNCTION task_tickets_spent(p_schema text, p_topic text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    tickets regclass := to_regclass(format('%I.%I', p_schema, 'task_ticket_' || md5(p_topic)));
    bound   regclass := to_regclass(format('%I.%I', p_schema, 'task_bound_' || md5(p_topic)));
BEGIN
    IF pg_sequence_last_value(bound) > pg_sequence_last_value(tickets) THEN
        PERFORM setval(bound, pg_sequence_last_value(tickets));
    END IF;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_tickets_spent(text, text) FROM PUBLIC;

-- task_tickets_drop drops the sequences of a destroyed topic, unless a push
-- holds one (see above): then they wait for the topic to come back.
-- +goose StatementBegin
CREATE FUNCTION task_tickets_drop(p_schema text, p_topic text) RETURNS void
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp SET lock_timeout = '10ms' AS $$
BEGIN
    EXECUTE format('DROP SEQUENCE IF EXISTS %I.%I, %I.%I', p_schema, 'task_ticket_' || md5(p_topic),
        p_schema, 'task_bound_' || md5(p_topic));
EXCEPTION WHEN lock_not_available THEN
    NULL;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_tickets_drop(text, text) FROM PUBLIC;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_admit(p_topic text, p_pushed bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    schema text;
    room   bigint;
    ready  bigint;
BEGIN
    SELECT n.nspname INTO schema FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = 'task_topic'::regclass;
    PERFORM pg_advisory_xact_lock(1952543599, hashtext(schema || '.' || p_topic));
    -- Read once the lock is held: a capacity set meanwhile is seen.
    SELECT capacity INTO room FROM task_topic WHERE topic = p_topic;
    IF room IS NULL THEN
        RETURN false;
    ELSIF p_pushed = 0 THEN
        RETURN true; -- a push of Suspended tasks needs no room
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
    PERFORM setval(format('%I.%I', schema, 'task_bound_' || md5(p_topic))::regclass,
        pg_sequence_last_value(format('%I.%I', schema, 'task_ticket_' || md5(p_topic))::regclass) + room - ready);
    RETURN true;
END
$$;
-- +goose StatementEnd

-- task_take is task_admit for a push that did not try its tickets in its
-- own statement (taskansi's, after its insert): it tries them here, in a
-- subtransaction that gives the shared lock back when they are past the
-- bound, before task_admit counts.
-- +goose StatementBegin
CREATE FUNCTION task_take(p_topic text, p_pushed bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    schema text;
BEGIN
    SELECT n.nspname INTO schema FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = 'task_topic'::regclass;
    BEGIN
        PERFORM pg_advisory_xact_lock_shared(1952543599, hashtext(schema || '.' || p_topic));
        IF p_pushed > 0 AND (SELECT capacity IS NOT NULL FROM task_topic WHERE topic = p_topic)
           AND (SELECT max(nextval(format('%I.%I', schema, 'task_ticket_' || md5(p_topic))::regclass))
                FROM generate_series(1, p_pushed))
               <= pg_sequence_last_value(format('%I.%I', schema, 'task_bound_' || md5(p_topic))::regclass) THEN
            RETURN true;
        END IF;
        RAISE EXCEPTION 'no room by tickets' USING ERRCODE = 'TR003';
    EXCEPTION WHEN SQLSTATE 'TR003' OR undefined_table THEN
        NULL; -- the lock is given back
    END;
    RETURN task_admit(p_topic, p_pushed);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_returned() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1952543599, hashtext(TG_TABLE_SCHEMA || '.' || NEW.topic));
    EXECUTE format('SELECT %I.task_tickets_spent($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, NEW.topic;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_topic_capacity() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    topic     text := CASE TG_OP WHEN 'DELETE' THEN OLD.topic ELSE NEW.topic END;
    capacity  bigint := CASE TG_OP WHEN 'DELETE' THEN NULL ELSE NEW.capacity END;
    partition text := 'task_' || md5(topic);
BEGIN
    IF capacity IS NULL THEN
        EXECUTE format('DROP TRIGGER IF EXISTS task_admission ON %I.%I', TG_TABLE_SCHEMA, partition);
        EXECUTE format('DROP TRIGGER IF EXISTS task_return ON %I.%I', TG_TABLE_SCHEMA, partition);
        IF TG_OP = 'DELETE' THEN
            EXECUTE format('SELECT %I.task_tickets_drop($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, topic;
        ELSE
            -- Kept, but spent: a push that admits by tickets without reading
            -- the capacity (taskpg's of one task) goes to task_admit, which
            -- tells it that the capacity is gone.
            EXECUTE format('SELECT %I.task_tickets_spent($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, topic;
        END IF;
    ELSIF OLD.capacity IS NULL THEN
        EXECUTE format('CREATE TRIGGER task_admission BEFORE INSERT ON %I.%I FOR EACH ROW'
                       ' WHEN (coalesce(current_setting(''taskrepo.admitting'', true), '''') = '''')'
                       ' EXECUTE FUNCTION %I.task_unadmitted()', TG_TABLE_SCHEMA, partition, TG_TABLE_SCHEMA);
        EXECUTE format('CREATE TRIGGER task_return AFTER UPDATE ON %I.%I FOR EACH ROW'
                       ' WHEN (NEW.state = 1 AND OLD.state <> 1)'
                       ' EXECUTE FUNCTION %I.task_returned()', TG_TABLE_SCHEMA, partition, TG_TABLE_SCHEMA);
        EXECUTE format('SELECT %I.task_tickets_create($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, topic;
    ELSE
        -- A new capacity: the next push counts, once the pushes admitted
        -- under the old one end (a count under way then sees it).
        PERFORM pg_advisory_xact_lock(1952543599, hashtext(TG_TABLE_SCHEMA || '.' || topic));
        EXECUTE format('SELECT %I.task_tickets_spent($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, topic;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

SELECT task_tickets_create(n.nspname, t.topic)
FROM task_topic AS t, pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
WHERE c.oid = 'task_topic'::regclass AND t.capacity IS NOT NULL;

DROP TABLE task_allowance;

-- +goose Down
CREATE TABLE task_allowance (
    topic     varchar(250) NOT NULL REFERENCES task_topic (topic) ON DELETE CASCADE,
    shard     smallint     NOT NULL,
    allowance bigint       NOT NULL DEFAULT 0 CHECK (allowance >= 0),
    PRIMARY KEY (topic, shard)
);
INSERT INTO task_allowance (topic, shard)
SELECT topic, s FROM task_topic, generate_series(0, 15) AS s WHERE capacity IS NOT NULL;

-- +goose StatementBegin
DO $$
DECLARE
    s record;
BEGIN
    FOR s IN SELECT n.nspname, c.relname FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
             JOIN pg_class AS t ON t.relnamespace = c.relnamespace
             WHERE t.oid = 'task_topic'::regclass AND c.relkind = 'S'
               AND (c.relname LIKE 'task\_ticket\_%' OR c.relname LIKE 'task\_bound\_%') LOOP
        EXECUTE format('DROP SEQUENCE %I.%I', s.nspname, s.relname);
    END LOOP;
END
$$;
-- +goose StatementEnd

-- The bodies of 00010.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_admit(p_topic text, p_pushed bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY INVOKER SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
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
    UPDATE task_allowance SET allowance = allowance - p_pushed
    WHERE topic = p_topic AND allowance >= p_pushed AND shard = (
        SELECT shard FROM task_allowance WHERE topic = p_topic AND allowance >= p_pushed
        ORDER BY random() LIMIT 1);
    IF FOUND THEN
        RETURN true;
    END IF;
    PERFORM 1 FROM task_allowance WHERE topic = p_topic ORDER BY shard FOR UPDATE;
    SELECT capacity INTO room FROM task_topic WHERE topic = p_topic;
    IF room IS NULL THEN
        RETURN false;
    END IF;
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
CREATE OR REPLACE FUNCTION task_returned() RETURNS trigger
LANGUAGE plpgsql SECURITY INVOKER AS $$
BEGIN
    EXECUTE format('UPDATE %I.task_allowance SET allowance = 0 WHERE topic = $1 AND allowance <> 0',
        TG_TABLE_SCHEMA) USING NEW.topic;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_topic_capacity() RETURNS trigger
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

DROP FUNCTION task_take(text, bigint);
DROP FUNCTION task_tickets_drop(text, text);
DROP FUNCTION task_tickets_spent(text, text);
DROP FUNCTION task_tickets_create(text, text);
