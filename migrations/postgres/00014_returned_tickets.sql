-- A task that comes back to Ready in place (a release, a retry, a snooze, a
-- revival in place) draws one ticket of its topic, as a push of one Ready
-- task does, rather than spend the bound (00013). What the tickets leave
-- of the room shrinks by one, exactly as the task takes it, and the next
-- push is still admitted by its tickets. Spending the bound made the next
-- push count, and a count takes the admission lock exclusively: it waited
-- for every open transaction that had pushed into the topic, and held off
-- every other push until its own transaction ended, so that a producer's
-- open transaction stalled the others after any release, and two
-- producers' transactions that counted deadlocked each other. A ticket
-- past the bound needs nothing more: the next push's tickets are past it
-- too, and it counts.
--
-- task_admit also refuses a push into a topic that is full by what is
-- committed at once: when pushes admitted by tickets hold the admission
-- lock (their producers' transactions may stay open), it counts without
-- waiting for them first, as they can only add READY tasks; only a push
-- that this count finds room for waits for the lock to set the bound.

-- +goose Up
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_returned() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1952543599, hashtext(TG_TABLE_SCHEMA || '.' || NEW.topic));
    PERFORM nextval(format('%I.%I', TG_TABLE_SCHEMA, 'task_ticket_' || md5(NEW.topic))::regclass);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

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
    IF NOT pg_try_advisory_xact_lock(1952543599, hashtext(schema || '.' || p_topic)) THEN
        -- Pushes admitted by tickets hold the lock: a topic full by what
        -- is committed (and this push) refuses without waiting for them.
        SELECT capacity INTO room FROM task_topic WHERE topic = p_topic;
        IF room IS NOT NULL AND p_pushed > 0 THEN
            EXECUTE 'SELECT (SELECT count(*) FROM task WHERE topic = $1 AND state = 1 AND not_before IS NULL)
                          + (SELECT count(*) FROM task WHERE topic = $1 AND state = 1 AND not_before IS NOT NULL)'
                INTO ready USING p_topic;
            IF ready > room THEN
                RAISE EXCEPTION 'topic % would hold % Ready tasks, over its capacity of %', p_topic, ready, room
                    USING ERRCODE = 'TR001', DETAIL = room || ' ' || ready;
            END IF;
        END IF;
        PERFORM pg_advisory_xact_lock(1952543599, hashtext(schema || '.' || p_topic));
    END IF;
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

-- +goose Down
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
