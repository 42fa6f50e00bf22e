-- Admission without waiting (issue 40). Until 00014 a push that counted a
-- topic with a capacity took the topic's admission lock exclusively, to
-- see no push admitted by tickets in flight: it waited for every open
-- producer transaction, held off every other push until its own
-- transaction ended, and two producers that both counted deadlocked.
--
-- Now every push admitted into a topic with a capacity, and every task that
-- comes back to Ready there, publishes how many Ready tasks its
-- transaction adds to the topic before it draws a ticket: task_publish
-- takes advisory locks, shared, in the two-key form, whose first key is
-- the topic's (hashtext of schema.topic) and whose second holds, in its low
-- 24 bits, the tasks it publishes (in its high bits the lock's number
-- within the transaction, so that no two of one transaction are the same
-- lock). Locks are seen by every session in pg_locks while they are held,
-- that is until the transaction ends: task_inflight sums the tasks that
-- the other transactions have in flight. A count is then exact without
-- waiting for anyone: the Ready tasks it sees, plus those in flight.
--
-- A push that tickets do not admit stores its tasks, then task_admit
-- counts the topic under its admission lock, a lock of the session held for
-- the count alone, so that counts take turns for a moment and never wait
-- for a transaction. The count publishes the push's tasks under that lock,
-- and adds to the Ready tasks it sees those in flight and the tickets that
-- the bound still promises; a topic that would be over its capacity refuses
-- the push (TR001, with that count), whose publication goes with the
-- count's subtransaction before the next count begins: two pushes that
-- count at once never refuse each other for tasks neither stores. Else the
-- bound rises to the last ticket plus the room left (see task_count).

-- Tickets still admit the pushes that fit, in the statement of the push:
-- published first, then drawn. A transaction publishes its first 16 pushes
-- of a topic exactly and its later ones by doubling what it shows, so
-- that it never holds more than about 40 locks of a topic: a count may
-- then see up to twice what such a transaction has in flight, until it
-- ends. A capacity being changed is waited for by counts (the admission
-- lock, exclusive in the transaction that changes it as 00013 has it),
-- never by pushes admitted by tickets. Functions called with the search
-- path of the migration are called with their exact argument types, which
-- no other function can take over.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION task_publish(p_key integer, p_ready bigint) RETURNS boolean
LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    name  text := 'taskrepo.published_' || to_hex(p_key);
    state text := coalesce(current_setting(name, true), '');
    locks integer := 0; -- the locks this transaction holds for the topic
    shown bigint := 0;  -- the tasks they publish
    held  bigint := 0;  -- the Ready tasks this transaction added
    value bigint;
BEGIN
    IF p_ready <= 0 THEN
        RETURN true;
    END IF;
    IF state <> '' THEN
        locks := split_part(state, ' ', 1)::integer;
        shown := split_part(state, ' ', 2)::bigint;
        held := split_part(state, ' ', 3)::bigint;
    END IF;
    held := held + p_ready;
    WHILE held > shown LOOP
        value := held - shown;
        IF locks >= 16 THEN
            value := greatest(value, shown);
        END IF;
        value := least(value, 16777215);
        locks := locks + 1;
        PERFORM pg_advisory_xact_lock_shared(p_key, (locks << 24) | value::integer);
        shown := shown + value;
    END LOOP;
    -- Local: a savepoint rolled back takes its locks and this state along.
    PERFORM set_config(name, locks || ' ' || shown || ' ' || held, true);
    RETURN true;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION task_inflight(p_key integer) RETURNS bigint
LANGUAGE sql STABLE SET search_path = pg_catalog, pg_temp AS $$
    SELECT coalesce(sum(l.objid::text::bigint & 16777215), 0)::bigint
    FROM pg_locks AS l
    WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.granted
      AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
      AND l.classid = (p_key::bigint & 4294967295)::text::oid
      AND l.pid IS DISTINCT FROM pg_backend_pid() -- a prepared transaction has none
$$;
-- +goose StatementEnd

-- task_count is task_admit under the admission lock. The room a count
-- finds is what the capacity leaves of the Ready tasks it sees, those in
-- flight, and the tickets that the bound still promises (pushes may be
-- drawing them now); the bound then rises to the last ticket plus the room
-- left, and never falls (but for a new capacity). So the tasks in the
-- topic, and those the bound promises, never exceed the capacity, whether
-- or not an earlier count saw the push's tasks, which it publishes here
-- (none did: they were not published). A push that finds the bound raised
-- since its tickets failed takes the room it promises by tickets instead.
-- +goose StatementBegin
CREATE FUNCTION task_count(p_schema text, p_topic text, p_key integer, p_pushed bigint)
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    tickets  regclass;
    bound    regclass;
    room     bigint;
    before   bigint;
    promised bigint;
    inflight bigint;
    ready    bigint;
BEGIN
    SELECT capacity INTO room FROM task_topic WHERE topic = p_topic;
    IF room IS NULL THEN
        RETURN false;
    ELSIF p_pushed = 0 THEN
        RETURN true; -- a push of Suspended tasks needs no room
    END IF;
    tickets := format('%I.%I', p_schema, 'task_ticket_' || md5(p_topic))::regclass;
    bound := format('%I.%I', p_schema, 'task_bound_' || md5(p_topic))::regclass;
    PERFORM task_publish(p_key, p_pushed);
    -- A count since the push drew its tickets may have raised the bound:
    -- room it promises is the push's to take, as a push's by tickets.
    IF pg_sequence_last_value(bound) - pg_sequence_last_value(tickets) >= p_pushed
       AND (SELECT max(nextval(tickets)) FROM generate_series(1, p_pushed)) <= pg_sequence_last_value(bound) THEN
        RETURN true;
    END IF;
    -- In this order: a ticket drawn before is in flight (published) or
    -- seen; one drawn after is within what the bound promised.
    before := pg_sequence_last_value(tickets);
    promised := greatest(pg_sequence_last_value(bound) - before, 0);
    inflight := task_inflight(p_key);
    -- Each count matches the predicate of its index (task_ready,
    -- task_deferred); EXECUTE plans it for the topic's partition.
    EXECUTE 'SELECT (SELECT count(*) FROM task WHERE topic = $1 AND state = 1 AND not_before IS NULL)
                  + (SELECT count(*) FROM task WHERE topic = $1 AND state = 1 AND not_before IS NOT NULL)'
        INTO ready USING p_topic;
    IF ready + inflight + promised > room THEN
        RAISE EXCEPTION 'topic % would hold % Ready tasks, over its capacity of %',
            p_topic, ready + inflight + promised, room
            USING ERRCODE = 'TR001', DETAIL = room || ' ' || ready + inflight + promised;
    END IF;
    PERFORM setval(bound, before + room - ready - inflight);
    RETURN true;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_count(text, text, integer, bigint) FROM PUBLIC;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_admit(p_topic text, p_pushed bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    schema   text;
    key      integer;
    admitted boolean;
BEGIN
    SELECT n.nspname INTO schema FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = 'task_topic'::regclass;
    key := hashtext(schema || '.' || p_topic);
    -- For the count alone (a session's lock, given back at once): the
    -- counts of a topic take turns, each a moment, and wait for a change
    -- of the capacity to commit.
    PERFORM pg_advisory_lock(1952543599, key);
    BEGIN
        admitted := task_count(schema, p_topic, key, p_pushed);
    EXCEPTION WHEN OTHERS THEN
        PERFORM pg_advisory_unlock(1952543599, key);
        RAISE;
    END;
    PERFORM pg_advisory_unlock(1952543599, key);
    RETURN admitted;
END
$$;
-- +goose StatementEnd

-- task_take admits by tickets what fits, published first, and else counts.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_take(p_topic text, p_pushed bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    schema text;
BEGIN
    SELECT n.nspname INTO schema FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = 'task_topic'::regclass;
    BEGIN
        IF p_pushed > 0 AND (SELECT capacity IS NOT NULL FROM task_topic WHERE topic = p_topic)
           AND task_publish(hashtext(schema || '.' || p_topic), p_pushed)
           AND (SELECT max(nextval(format('%I.%I', schema, 'task_ticket_' || md5(p_topic))::regclass))
                FROM generate_series(1, p_pushed))
               <= pg_sequence_last_value(format('%I.%I', schema, 'task_bound_' || md5(p_topic))::regclass) THEN
            RETURN true;
        END IF;
        RAISE EXCEPTION 'no room by tickets' USING ERRCODE = 'TR003';
    EXCEPTION WHEN SQLSTATE 'TR003' OR undefined_table THEN
        NULL; -- what it published here is given back
    END;
    RETURN task_admit(p_topic, p_pushed);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_returned() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM task_publish(hashtext(TG_TABLE_SCHEMA || '.' || NEW.topic), 1::bigint);
    PERFORM nextval(format('%I.%I', TG_TABLE_SCHEMA, 'task_ticket_' || md5(NEW.topic))::regclass);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
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
CREATE OR REPLACE FUNCTION task_take(p_topic text, p_pushed bigint) RETURNS boolean
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
    SELECT capacity INTO room FROM task_topic WHERE topic = p_topic;
    IF room IS NULL THEN
        RETURN false;
    ELSIF p_pushed = 0 THEN
        RETURN true;
    END IF;
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

DROP FUNCTION task_count(text, text, integer, bigint);
DROP FUNCTION task_inflight(integer);
DROP FUNCTION task_publish(integer, bigint);
