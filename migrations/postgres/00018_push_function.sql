-- Pushing from SQL (issue 45): task_push and task_push_many, version 1 of
-- the push API for producers that are not written in Go. They push the way
-- taskpg's Push does, inside the caller's transaction:
--
-- - the four insertion modes by name (APPEND, SUPERSEDE, REPLACE, DELETE,
--   in any case): the older tasks of the pushed identifiers change as
--   docs/model.md tells, after the same advisory locks as taskpg's (two-key
--   form, keys by FNV-1a of schema, topic and identifier: task_push_key),
--   so that a push from SQL and one from Go serialize alike; within a push
--   of many, an identifier's earlier creations are stored REDUNDANT
--   (DELETE: not stored);
-- - deferred tasks (a not-before time), READY and polled from that time,
--   and suspended ones (SUSPENDED until a junction, revival or
--   reassignment moves them);
-- - the topic's capacity, admitted by task_take, which refuses with
--   SQLSTATE TR001 (the topic's) or TR004 (an identifier's), naming the
--   topic, the count and the capacity: the push changes nothing, and a
--   caller who pushed inside a savepoint rolls back to it and goes on;
-- - the wake-up of the consumers of every process: a notification on the
--   schema's tasks channel (due channel for deferred tasks), delivered
--   when the caller's transaction commits.
--
-- Bad input is refused before anything changes: SQLSTATE 22023 for an
-- empty or over-long topic, identifier or reference, a NULL identifier,
-- arrays of different lengths, an unknown mode or a not-before time
-- outside the years 1000 to 9999; 42704 for a topic that is not
-- registered. The functions run with the rights of their caller (the
-- application role's grants of docs/operating.md): a role without them is
-- refused by PostgreSQL (42501). Their search_path is the migration's.
-- docs/languages.md is the reference.

-- +goose Up
-- task_push_hash is FNV-1a (32 bits) of bytes, as Go's hash/fnv.
-- +goose StatementBegin
CREATE FUNCTION task_push_hash(p_bytes bytea) RETURNS bigint
LANGUAGE plpgsql IMMUTABLE STRICT SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    h bigint := 2166136261;
BEGIN
    FOR i IN 0 .. length(p_bytes) - 1 LOOP
        h := ((h # get_byte(p_bytes, i)) * 16777619) & 4294967295;
    END LOOP;
    RETURN h;
END
$$;
-- +goose StatementEnd

-- task_push_key is the second key of taskpg's advisory locks for parts
-- (internal/lockkey): the hash of each part's UTF-8 bytes followed by a
-- zero byte, as a signed integer.
-- +goose StatementBegin
CREATE FUNCTION task_push_key(p_parts text[]) RETURNS integer
LANGUAGE sql IMMUTABLE STRICT SET search_path FROM CURRENT AS $$
    SELECT (h - CASE WHEN h >= 2147483648 THEN 4294967296 ELSE 0 END)::integer
    FROM task_push_hash((SELECT string_agg(convert_to(p, 'UTF8') || '\x00'::bytea, ''::bytea ORDER BY o)
                         FROM unnest(p_parts) WITH ORDINALITY AS u (p, o))) AS h
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION task_push_many(p_topic text, p_identifiers text[], p_inputs text[] DEFAULT NULL,
    p_references text[] DEFAULT NULL, p_mode text DEFAULT 'APPEND', p_not_before timestamptz[] DEFAULT NULL,
    p_suspended boolean[] DEFAULT NULL)
RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    schema   text;
    n        integer := coalesce(cardinality(p_identifiers), 0);
    mode     text := upper(p_mode);
    capacity bigint;
    keys     integer[];
    channel  text;
BEGIN
    IF p_topic IS NULL OR p_topic = '' OR octet_length(p_topic) > 250 THEN
        RAISE EXCEPTION 'taskrepo: the topic % is empty or over 250 bytes', quote_nullable(left(p_topic, 64))
            USING ERRCODE = '22023';
    ELSIF mode IS NULL OR mode NOT IN ('APPEND', 'SUPERSEDE', 'REPLACE', 'DELETE') THEN
        RAISE EXCEPTION 'taskrepo: % is not an insertion mode (APPEND, SUPERSEDE, REPLACE or DELETE)',
            quote_nullable(left(p_mode, 64)) USING ERRCODE = '22023';
    ELSIF n <> coalesce(cardinality(p_inputs), n) OR n <> coalesce(cardinality(p_references), n)
          OR n <> coalesce(cardinality(p_not_before), n) OR n <> coalesce(cardinality(p_suspended), n) THEN
        RAISE EXCEPTION 'taskrepo: % identifiers, % inputs, % references, % not-before times and % suspended flags: they must be as many',
            n, cardinality(p_inputs), cardinality(p_references), cardinality(p_not_before), cardinality(p_suspended)
            USING ERRCODE = '22023';
    END IF;
    IF n = 0 THEN
        RETURN; -- nothing to push, as Push of no creations
    END IF;
    PERFORM task_push_check(p_identifiers, p_references, p_not_before);

    -- The topic's row, kept from a concurrent Destroy until the push ends.
    SELECT t.capacity INTO capacity FROM task_topic AS t WHERE t.topic = p_topic FOR KEY SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'taskrepo: unknown topic %', quote_literal(left(p_topic, 64)) USING ERRCODE = '42704';
    END IF;
    SELECT ns.nspname INTO schema FROM pg_class AS c JOIN pg_namespace AS ns ON ns.oid = c.relnamespace
    WHERE c.oid = 'task_topic'::regclass;

    IF mode <> 'APPEND' THEN
        -- taskpg's identifier locks: the topic's insertion lock shared and
        -- each identifier's, or the topic's alone for more than 8 keys.
        keys := ARRAY(SELECT DISTINCT task_push_key(ARRAY[schema, p_topic, i]) FROM unnest(p_identifiers) AS i ORDER BY 1);
        IF cardinality(keys) > 8 THEN
            PERFORM pg_advisory_xact_lock(1952543596, task_push_key(ARRAY[schema, p_topic]));
        ELSE
            PERFORM pg_advisory_xact_lock_shared(1952543596, task_push_key(ARRAY[schema, p_topic]));
            PERFORM pg_advisory_xact_lock(1952543597, k) FROM unnest(keys) AS k ORDER BY k;
        END IF;
        PERFORM task_push_older(p_topic, p_identifiers, mode);
    END IF;

    IF capacity IS NOT NULL THEN
        PERFORM set_config('taskrepo.admitting', 'on', true);
    END IF;
    RETURN QUERY SELECT * FROM task_push_store(p_topic, p_identifiers, p_inputs, p_references, mode, p_not_before,
                                               p_suspended, capacity IS NOT NULL);

    -- A push with a deferred task wakes the consumers on the due channel,
    -- which also has them read the topic's next due time.
    channel := CASE WHEN EXISTS (SELECT FROM unnest(p_not_before) AS x WHERE x IS NOT NULL)
                    THEN 'taskrepo_due' ELSE 'taskrepo_tasks' END;
    PERFORM pg_notify(task_push_channel(channel, schema), p_topic);
END
$$;
-- +goose StatementEnd

-- task_push_check refuses what check.Creation refuses of a push's
-- columns: a NULL, empty or over-long identifier, an over-long reference,
-- a not-before time outside the years 1000 to 9999.
-- +goose StatementBegin
CREATE FUNCTION task_push_check(p_identifiers text[], p_references text[], p_not_before timestamptz[]) RETURNS void
LANGUAGE plpgsql STABLE SET search_path = pg_catalog, pg_temp AS $$
DECLARE
    i integer;
BEGIN
    i := (SELECT min(o) FROM unnest(p_identifiers) WITH ORDINALITY AS c (v, o)
          WHERE v IS NULL OR v = '' OR octet_length(v) > 500);
    IF i IS NOT NULL THEN
        RAISE EXCEPTION 'taskrepo: identifier % (task % of the push) is NULL, empty or over 500 bytes',
            quote_nullable(left(p_identifiers[i], 64)), i USING ERRCODE = '22023';
    END IF;
    i := (SELECT min(o) FROM unnest(p_references) WITH ORDINALITY AS c (v, o) WHERE octet_length(v) > 500);
    IF i IS NOT NULL THEN
        RAISE EXCEPTION 'taskrepo: the reference of task % of the push is over 500 bytes', i USING ERRCODE = '22023';
    END IF;
    i := (SELECT min(o) FROM unnest(p_not_before) WITH ORDINALITY AS c (v, o)
          WHERE extract(year FROM v AT TIME ZONE 'utc') NOT BETWEEN 1000 AND 9999);
    IF i IS NOT NULL THEN
        RAISE EXCEPTION 'taskrepo: the not-before time % of task % of the push lies outside the years 1000 to 9999',
            p_not_before[i], i USING ERRCODE = '22023';
    END IF;
END
$$;
-- +goose StatementEnd

-- task_push_older changes the older tasks of identifiers in topic as mode
-- says (taskpg's pushRedundant and pushDelete): SUPERSEDE makes its READY
-- tasks REDUNDANT, REPLACE those from READY to SUCCEEDED, DELETE deletes
-- those from READY to REDUNDANT; a task another transaction holds locked
-- is left, as taskpg's push leaves it.
-- +goose StatementBegin
CREATE FUNCTION task_push_older(p_topic text, p_identifiers text[], p_mode text) RETURNS void
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    upto  smallint := CASE p_mode WHEN 'SUPERSEDE' THEN 1 WHEN 'REPLACE' THEN 6 ELSE 8 END;
    older bigint[];
BEGIN
    older := ARRAY(SELECT sequence FROM task
                   WHERE topic = p_topic AND state BETWEEN 1 AND upto AND identifier = ANY (p_identifiers)
                   ORDER BY sequence FOR UPDATE SKIP LOCKED);
    IF p_mode = 'DELETE' THEN
        DELETE FROM task WHERE topic = p_topic AND sequence = ANY (older);
    ELSE
        UPDATE task SET state = 8, descent = GREATEST(state, descent) WHERE topic = p_topic AND sequence = ANY (older);
    END IF;
END
$$;
-- +goose StatementEnd

-- task_push_store inserts the creations, READY or SUSPENDED, and returns
-- their sequences in creation order; with counted, it has task_take admit
-- the push's READY tasks afterwards, as taskansi's push on PostgreSQL
-- does: by the topic's tickets while they last, else by a count.
-- +goose StatementBegin
CREATE FUNCTION task_push_store(p_topic text, p_identifiers text[], p_inputs text[], p_references text[],
    p_mode text, p_not_before timestamptz[], p_suspended boolean[], p_counted boolean) RETURNS SETOF bigint
LANGUAGE plpgsql SET search_path FROM CURRENT AS $$
DECLARE
    stored  bigint[];
    ready   text[];
BEGIN
    WITH c AS (
        SELECT i AS identifier, p_inputs[o] AS input, p_references[o] AS reference,
               p_not_before[o] AT TIME ZONE 'utc' AS not_before, coalesce(p_suspended[o], false) AS suspended, o,
               o = max(o) OVER (PARTITION BY i) OR p_mode = 'APPEND' AS last
        FROM unnest(p_identifiers) WITH ORDINALITY AS u (i, o)),
    inserted AS (
        INSERT INTO task (topic, sequence, identifier, state, reference, input, not_before, revivals)
        SELECT p_topic, nextval('task_sequence'), identifier,
               CASE WHEN NOT last THEN 8 WHEN suspended THEN 4 ELSE 1 END,
               NULLIF(reference, ''), NULLIF(input, ''), not_before, 0
        FROM c WHERE last OR p_mode <> 'DELETE'
        ORDER BY o
        RETURNING sequence, identifier, state)
    SELECT array_agg(sequence ORDER BY sequence), array_agg(identifier) FILTER (WHERE state = 1)
    INTO stored, ready FROM inserted;
    IF p_counted THEN
        IF ready IS NOT NULL THEN
            PERFORM task_take(p_topic, cardinality(ready)::bigint, ready);
        END IF;
        -- The rest of the caller's transaction inserts no task unadmitted.
        PERFORM set_config('taskrepo.admitting', '', true);
    END IF;
    RETURN QUERY SELECT unnest(stored);
END
$$;
-- +goose StatementEnd

-- task_push_channel is edge.Channel: the channel of base for the tables of
-- schema.
-- +goose StatementBegin
CREATE FUNCTION task_push_channel(p_base text, p_schema text) RETURNS text
LANGUAGE plpgsql IMMUTABLE SET search_path FROM CURRENT AS $$
DECLARE
    name  text := p_base || '_' || p_schema;
    keep  integer;
    bytes bytea := convert_to(p_schema, 'UTF8');
BEGIN
    IF p_schema = 'public' OR p_schema = '' THEN
        RETURN p_base;
    ELSIF octet_length(name) <= 63 THEN
        RETURN name;
    END IF;
    keep := 63 - octet_length(p_base) - 2 - 8;
    -- a prefix of whole characters of at most keep bytes
    WHILE keep > 0 AND (get_byte(bytes, keep) & 192) = 128 LOOP
        keep := keep - 1;
    END LOOP;
    RETURN p_base || '_' || convert_from(substring(bytes FROM 1 FOR keep), 'UTF8') || '_'
        || lpad(to_hex(task_push_hash(bytes)), 8, '0');
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION task_push(p_topic text, p_identifier text, p_input text DEFAULT NULL, p_reference text DEFAULT NULL,
    p_mode text DEFAULT 'APPEND', p_not_before timestamptz DEFAULT NULL, p_suspended boolean DEFAULT false) RETURNS bigint
LANGUAGE sql SET search_path FROM CURRENT AS $$
    SELECT task_push_many(p_topic, ARRAY[p_identifier], ARRAY[p_input], ARRAY[p_reference], p_mode, ARRAY[p_not_before],
                          ARRAY[p_suspended])
$$;
-- +goose StatementEnd

COMMENT ON FUNCTION task_push(text, text, text, text, text, timestamptz, boolean) IS
    'taskrepo push API version 1: push one task inside the caller''s transaction; returns its sequence (docs/languages.md)';
COMMENT ON FUNCTION task_push_many(text, text[], text[], text[], text, timestamptz[], boolean[]) IS
    'taskrepo push API version 1: push many tasks inside the caller''s transaction; returns their sequences in creation order (docs/languages.md)';

-- +goose Down
DROP FUNCTION task_push(text, text, text, text, text, timestamptz, boolean);
DROP FUNCTION task_push_many(text, text[], text[], text[], text, timestamptz[], boolean[]);
DROP FUNCTION task_push_store(text, text[], text[], text[], text, timestamptz[], boolean[], boolean);
DROP FUNCTION task_push_older(text, text[], text);
DROP FUNCTION task_push_check(text[], text[], timestamptz[]);
DROP FUNCTION task_push_channel(text, text);
DROP FUNCTION task_push_key(text[]);
DROP FUNCTION task_push_hash(bytea);
