-- A bound on what waits per identifier (issue 40): the most Ready tasks
-- (deferred ones included) of any one identifier of a topic
-- (task_topic.identifier_capacity, NULL for none), beside the topic's own
-- (task_topic.capacity).
--
-- - The push statements of taskpg admit the tasks of a topic whose capacity
--   is not NULL, and read nothing else: a topic that bounds only its
--   identifiers has the largest bigint as its capacity, which no count
--   reaches (internal/capacity.Unbounded), so that its pushes are admitted
--   and its partition has the triggers of 00010.
-- - Tickets cannot tell identifiers apart: in a topic with a bound per
--   identifier, counts never raise the bound of the tickets (task_count),
--   and setting one spends it, so that every push counts, under the
--   admission lock of 00015 (a session's lock for the count alone: the
--   counts of the topic take turns for a moment and wait for no
--   transaction).
-- - A count publishes the push's Ready tasks per identifier, as 00015
--   publishes them per topic (task_publish): shared advisory locks in the
--   two-key form, whose first key is the identifier's,
--   hashtext(md5(schema.topic) || identifier), held until the push's
--   transaction ends. The count of an identifier is then the Ready tasks of
--   it that the count sees (its own push's included) plus those the other
--   transactions have in flight, and is exact without waiting for them. A
--   key that two identifiers (or an identifier and a topic) share by a
--   collision of hashtext sums the tasks of both: a count may then refuse
--   a push that had room, never admit one that had none. md5 keeps the
--   keys of identifiers apart from those of topics (hashtext of
--   schema.topic) but by such a collision.
-- - A transaction publishes under keys of their own the tasks of its first
--   16 identifiers of a topic, and the others' under the topic's spread
--   key, hashtext(md5(schema.topic)), which every count of an identifier
--   adds: a bulk push of many identifiers takes a few locks, not one per
--   identifier, and may make the counts of the others refuse too early
--   until it ends, never admit too many.
-- - A task that comes back to Ready in place publishes its identifier too
--   (the trigger task_return_keyed, beside task_return).
-- - An index of the partition's Ready tasks by identifier
--   (task_<md5>_capped) serves the counts: a count reads the identifier's
--   Ready tasks only, from the index alone where the visibility map allows
--   (topic is included: the planner filters on it, partition or not). It comes and goes with the bound, as the keyed index
--   of 00011 does with a limit per identifier, and creating it waits for
--   the pushes into the topic under way, which were admitted before.
-- - task_admit and task_take take the identifiers of the push's Ready
--   tasks (one per task); their forms of 00015 are for a push that does
--   not give them, which a topic with a bound per identifier refuses
--   (SQLSTATE 0A000). A refusal of an identifier is SQLSTATE TR004, its
--   DETAIL the capacity, the count and the identifier.

-- +goose Up
-- A bound per identifier needs the admission of a capacity (see above).
ALTER TABLE task_topic
    ADD COLUMN identifier_capacity bigint CHECK (identifier_capacity > 0),
    ADD CONSTRAINT task_topic_identifier_admitted CHECK (identifier_capacity IS NULL OR capacity IS NOT NULL);

-- task_publish_keyed publishes the Ready tasks of identifiers (one entry per
-- task) of a topic of schema, as task_publish publishes a topic's.
-- +goose StatementBegin
CREATE FUNCTION task_publish_keyed(p_schema text, p_topic text, p_identifiers text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    prefix text := md5(p_schema || '.' || p_topic);
    name   text := 'taskrepo.keyed_' || prefix;
    keyed  integer := coalesce(nullif(current_setting(name, true), ''), '0')::integer;
    spread bigint := 0;
    key    integer;
    r      record;
BEGIN
    FOR r IN SELECT i AS identifier, count(*) AS n FROM unnest(p_identifiers) AS i GROUP BY i ORDER BY i LOOP
        key := hashtext(prefix || r.identifier);
        IF coalesce(current_setting('taskrepo.published_' || to_hex(key), true), '') <> '' THEN
            PERFORM task_publish(key, r.n); -- published before in this transaction
        ELSIF keyed < 16 THEN
            keyed := keyed + 1;
            PERFORM task_publish(key, r.n);
        ELSE
            spread := spread + r.n;
        END IF;
    END LOOP;
    PERFORM task_publish(hashtext(prefix), spread);
    -- Local: a savepoint rolled back takes its locks and this state along.
    PERFORM set_config(name, keyed::text, true);
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_publish_keyed(text, text, text[]) FROM PUBLIC;

-- task_count_keyed refuses the push when one of its identifiers would hold
-- more Ready tasks than p_each, counting those of other transactions in
-- flight, after it published its own. The caller holds the admission lock.
-- +goose StatementBegin
CREATE FUNCTION task_count_keyed(p_schema text, p_topic text, p_each bigint, p_identifiers text[]) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    prefix      text := md5(p_schema || '.' || p_topic);
    identifiers text[];
    inflight    bigint[];
    spread      bigint;
    ready       bigint;
    r           record;
BEGIN
    IF p_identifiers IS NULL THEN
        RAISE EXCEPTION 'topic % has a capacity per identifier: its pushes must name their identifiers', p_topic
            USING ERRCODE = 'feature_not_supported';
    END IF;
    PERFORM task_publish_keyed(p_schema, p_topic, p_identifiers);
    -- In this order, as task_count's: the tasks in flight are read before
    -- the snapshot of the count is taken, so that a transaction that
    -- commits in between is counted twice (which may only refuse), never
    -- missed.
    SELECT array_agg(d.i ORDER BY d.i), array_agg(task_inflight(hashtext(prefix || d.i)) ORDER BY d.i)
    INTO identifiers, inflight
    FROM (SELECT DISTINCT i FROM unnest(p_identifiers) AS i) AS d;
    spread := task_inflight(hashtext(prefix));
    -- Each count matches the predicate of the partition's index
    -- task_<md5>_capped; EXECUTE plans it for the topic's partition.
    FOR r IN EXECUTE 'SELECT k, (SELECT count(*) FROM task AS t WHERE t.topic = $1 AND t.identifier = $2[k] AND t.state = 1) AS n
                      FROM generate_subscripts($2, 1) AS k ORDER BY k'
             USING p_topic, identifiers LOOP
        ready := r.n + inflight[r.k] + spread;
        IF ready > p_each THEN
            RAISE EXCEPTION 'identifier % of topic % would hold % Ready tasks, over its capacity of %',
                identifiers[r.k], p_topic, ready, p_each
                USING ERRCODE = 'TR004', DETAIL = p_each || ' ' || ready || ' ' || identifiers[r.k];
        END IF;
    END LOOP;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_count_keyed(text, text, bigint, text[]) FROM PUBLIC;

-- task_count of 00015, with the bounds of the identifiers: the topic's
-- bound first, then its identifiers'. A topic with a bound per identifier
-- keeps its tickets spent.
-- +goose StatementBegin
CREATE FUNCTION task_count(p_schema text, p_topic text, p_key integer, p_pushed bigint, p_identifiers text[])
RETURNS boolean
LANGUAGE plpgsql SET search_path FROM CURRENT SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    tickets  regclass;
    bound    regclass;
    room     bigint;
    each     bigint;
    before   bigint;
    promised bigint;
    inflight bigint;
    ready    bigint;
BEGIN
    SELECT capacity, identifier_capacity INTO room, each FROM task_topic WHERE topic = p_topic;
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
    IF each IS NULL AND pg_sequence_last_value(bound) - pg_sequence_last_value(tickets) >= p_pushed
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
    IF each IS NOT NULL THEN
        PERFORM task_count_keyed(p_schema, p_topic, each, p_identifiers);
        RETURN true; -- the bound stays spent: the next push counts too
    END IF;
    PERFORM setval(bound, before + room - ready - inflight);
    RETURN true;
END
$$;
-- +goose StatementEnd
REVOKE EXECUTE ON FUNCTION task_count(text, text, integer, bigint, text[]) FROM PUBLIC;

-- task_admit of 00015, with the identifiers of the push's Ready tasks.
-- +goose StatementBegin
CREATE FUNCTION task_admit(p_topic text, p_pushed bigint, p_identifiers text[]) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    schema   text;
    key      integer;
    admitted boolean;
BEGIN
    SELECT n.nspname INTO schema FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = 'task_topic'::regclass;
    key := hashtext(schema || '.' || p_topic);
    PERFORM pg_advisory_lock(1952543599, key);
    BEGIN
        admitted := task_count(schema, p_topic, key, p_pushed, p_identifiers);
    EXCEPTION WHEN OTHERS THEN
        PERFORM pg_advisory_unlock(1952543599, key);
        RAISE;
    END;
    PERFORM pg_advisory_unlock(1952543599, key);
    RETURN admitted;
END
$$;
-- +goose StatementEnd

-- task_take of 00015, with the identifiers of the push's Ready tasks: a
-- topic with a bound per identifier admits nothing by tickets (its bound
-- is spent).
-- +goose StatementBegin
CREATE FUNCTION task_take(p_topic text, p_pushed bigint, p_identifiers text[]) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
DECLARE
    schema text;
BEGIN
    SELECT n.nspname INTO schema FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace
    WHERE c.oid = 'task_topic'::regclass;
    BEGIN
        IF p_pushed > 0 AND (SELECT capacity IS NOT NULL AND identifier_capacity IS NULL
                             FROM task_topic WHERE topic = p_topic)
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
    RETURN task_admit(p_topic, p_pushed, p_identifiers);
END
$$;
-- +goose StatementEnd

-- The forms of 00015 give no identifiers.
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_admit(p_topic text, p_pushed bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    RETURN task_admit(p_topic, p_pushed, NULL::text[]);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION task_take(p_topic text, p_pushed bigint) RETURNS boolean
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    RETURN task_take(p_topic, p_pushed, NULL::text[]);
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION task_returned_keyed() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $$
BEGIN
    PERFORM task_publish_keyed(TG_TABLE_SCHEMA, NEW.topic, ARRAY[NEW.identifier]::text[]);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- The index and the trigger of the partition follow
-- task_topic.identifier_capacity, created and dropped with the rights of the
-- role that migrated; task_topic_capacity (which fires first, by its name)
-- has made the tickets. A bound set or changed spends them, once the count
-- under way is done (the admission lock), so that the next push counts.
-- +goose StatementBegin
CREATE FUNCTION task_topic_identifier_capacity() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    partition text := 'task_' || md5(NEW.topic);
BEGIN
    IF NEW.identifier_capacity IS NULL THEN
        EXECUTE format('DROP TRIGGER IF EXISTS task_return_keyed ON %I.%I', TG_TABLE_SCHEMA, partition);
        EXECUTE format('DROP INDEX IF EXISTS %I.%I', TG_TABLE_SCHEMA, partition || '_capped');
        RETURN NULL;
    END IF;
    IF OLD.identifier_capacity IS NULL THEN
        EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I.%I (identifier) INCLUDE (topic) WHERE state = 1',
            partition || '_capped', TG_TABLE_SCHEMA, partition);
        EXECUTE format('CREATE TRIGGER task_return_keyed AFTER UPDATE ON %I.%I FOR EACH ROW'
                       ' WHEN (NEW.state = 1 AND OLD.state <> 1)'
                       ' EXECUTE FUNCTION %I.task_returned_keyed()', TG_TABLE_SCHEMA, partition, TG_TABLE_SCHEMA);
    END IF;
    PERFORM pg_advisory_xact_lock(1952543599, hashtext(TG_TABLE_SCHEMA || '.' || NEW.topic));
    EXECUTE format('SELECT %I.task_tickets_spent($1, $2)', TG_TABLE_SCHEMA) USING TG_TABLE_SCHEMA, NEW.topic;
    RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER task_topic_identifier_capacity AFTER UPDATE OF identifier_capacity ON task_topic
    FOR EACH ROW WHEN (OLD.identifier_capacity IS DISTINCT FROM NEW.identifier_capacity)
    EXECUTE FUNCTION task_topic_identifier_capacity();

-- +goose Down
DROP TRIGGER task_topic_identifier_capacity ON task_topic;
-- +goose StatementBegin
DO $$
DECLARE
    t text;
BEGIN
    FOR t IN SELECT topic FROM task_topic WHERE identifier_capacity IS NOT NULL LOOP
        EXECUTE format('DROP TRIGGER IF EXISTS task_return_keyed ON %I', 'task_' || md5(t));
        EXECUTE format('DROP INDEX IF EXISTS %I', 'task_' || md5(t) || '_capped');
    END LOOP;
END
$$;
-- +goose StatementEnd
-- A topic that bounded only its identifiers has no capacity any more.
UPDATE task_topic SET capacity = NULL WHERE capacity = 9223372036854775807;
DROP FUNCTION task_topic_identifier_capacity();
DROP FUNCTION task_returned_keyed();

-- The bodies of 00015.
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

DROP FUNCTION task_take(text, bigint, text[]);
DROP FUNCTION task_admit(text, bigint, text[]);
DROP FUNCTION task_count(text, text, integer, bigint, text[]);
DROP FUNCTION task_count_keyed(text, text, bigint, text[]);
DROP FUNCTION task_publish_keyed(text, text, text[]);
ALTER TABLE task_topic DROP CONSTRAINT task_topic_identifier_admitted, DROP COLUMN identifier_capacity;
