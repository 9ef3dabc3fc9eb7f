-- An archival entry's tsvector holds the two entries before it in its
-- conversation (or its owner's stream) and the one after it, as on SQLite
-- (migration 0035): the part before is the entry before its entry before
-- and a space, then its entry before; the part after its entry after.
-- Each step is archival_links' rule (0029): live entries around a live
-- one, any around a superseded one, stream neighbours within the time
-- gap. The window after stays one entry so that appending to a
-- conversation rewrites two rows, as it did.
--
-- engram_archival_step takes one step from an entry given by its values,
-- passing over the entry skip: an entry's own tsvector is made before
-- its row is written (BEFORE trigger), when the table may still hold its
-- old row, which must not count as its own second neighbour.
CREATE FUNCTION engram_archival_step(x_id BIGINT, x_agent TEXT, conv TEXT, pos BIGINT, x_live BOOLEAN, x_created BIGINT, dir INT, skip BIGINT)
RETURNS BIGINT LANGUAGE plpgsql STABLE AS $$
DECLARE
    r BIGINT;
    c BIGINT;
BEGIN
    IF dir < 0 THEN
        IF conv IS NULL AND x_live THEN
            SELECT p.id, p.created_at INTO r, c FROM archival p
                WHERE p.agent = x_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> x_id AND p.id IS DISTINCT FROM skip
                    AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < x_id)
                ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        ELSIF conv IS NULL THEN
            SELECT p.id, p.created_at INTO r, c FROM archival p
                WHERE p.agent = x_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> x_id AND p.id IS DISTINCT FROM skip
                    AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < x_id)
                ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        ELSIF x_live THEN
            SELECT p.id, p.created_at INTO r, c FROM archival p
                WHERE p.agent = x_agent AND engram_archival_conversation(p.metadata_json) = conv AND p.valid_to IS NULL AND p.id <> x_id AND p.id IS DISTINCT FROM skip
                    AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < x_id)
                ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        ELSE
            SELECT p.id, p.created_at INTO r, c FROM archival p
                WHERE p.agent = x_agent AND engram_archival_conversation(p.metadata_json) = conv AND p.id <> x_id AND p.id IS DISTINCT FROM skip
                    AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < x_id)
                ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        END IF;
    ELSE
        IF conv IS NULL AND x_live THEN
            SELECT p.id, p.created_at INTO r, c FROM archival p
                WHERE p.agent = x_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> x_id AND p.id IS DISTINCT FROM skip
                    AND COALESCE(p.conversation_pos, p.id) >= pos AND (COALESCE(p.conversation_pos, p.id) > pos OR p.id > x_id)
                ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1;
        ELSIF conv IS NULL THEN
            SELECT p.id, p.created_at INTO r, c FROM archival p
                WHERE p.agent = x_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> x_id AND p.id IS DISTINCT FROM skip
                    AND COALESCE(p.conversation_pos, p.id) >= pos AND (COALESCE(p.conversation_pos, p.id) > pos OR p.id > x_id)
                ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1;
        ELSIF x_live THEN
            SELECT p.id, p.created_at INTO r, c FROM archival p
                WHERE p.agent = x_agent AND engram_archival_conversation(p.metadata_json) = conv AND p.valid_to IS NULL AND p.id <> x_id AND p.id IS DISTINCT FROM skip
                    AND COALESCE(p.conversation_pos, p.id) >= pos AND (COALESCE(p.conversation_pos, p.id) > pos OR p.id > x_id)
                ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1;
        ELSE
            SELECT p.id, p.created_at INTO r, c FROM archival p
                WHERE p.agent = x_agent AND engram_archival_conversation(p.metadata_json) = conv AND p.id <> x_id AND p.id IS DISTINCT FROM skip
                    AND COALESCE(p.conversation_pos, p.id) >= pos AND (COALESCE(p.conversation_pos, p.id) > pos OR p.id > x_id)
                ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1;
        END IF;
    END IF;
    IF conv IS NULL AND NOT engram_archival_stream_near(c, x_created) THEN
        RETURN NULL;
    END IF;
    RETURN r;
END $$;

-- Deferred indexing: while the transaction's setting
-- engram.archival_deferred is 'on' (set_config(..., true): it ends with
-- the transaction, so a pooler in transaction mode is safe), inserting an
-- entry computes no tsvector (its own, or its neighbours'): the
-- transaction then indexes the entries it inserted once, with the entries
-- before them and the two after each, as the rows then stand
-- (engram_archival_flush, from the Go backend's FlushArchivalIndex). A
-- batch of a conversation's entries so indexes each once, where each
-- insert would re-index the entry before it again. Other writes are not
-- deferred.
CREATE FUNCTION engram_archival_deferred() RETURNS BOOLEAN LANGUAGE sql STABLE AS $$
    SELECT COALESCE(current_setting('engram.archival_deferred', true), '') = 'on'
$$;

CREATE OR REPLACE FUNCTION engram_archival_fts_own() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' AND engram_archival_deferred() THEN
        RETURN NEW;
    END IF;
    NEW.fts := engram_archival_fts(NEW.id, NEW.agent, NEW.content, NEW.tags_text, NEW.metadata_json, NEW.conversation_pos, NEW.valid_to IS NULL, NEW.created_at);
    RETURN NEW;
END $$;

DROP TRIGGER archival_fts_stream_ai ON archival;
CREATE TRIGGER archival_fts_stream_ai AFTER INSERT ON archival
    FOR EACH ROW WHEN (engram_archival_conversation(NEW.metadata_json) IS NULL AND NOT engram_archival_deferred())
    EXECUTE FUNCTION engram_archival_fts_stream();

-- The places after an entry: the live entry after it and any entry after
-- it, of its conversation (or its owner's stream), whatever the time gap.
-- They hold every entry whose neighbour before it is.
CREATE FUNCTION engram_archival_adjacent(a_id BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$
DECLARE
    x archival%ROWTYPE;
    conv TEXT;
    pos BIGINT;
BEGIN
    SELECT * INTO x FROM archival WHERE id = a_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    conv := engram_archival_conversation(x.metadata_json);
    pos := COALESCE(x.conversation_pos, x.id);
    RETURN QUERY
        (SELECT p.id FROM archival p
            WHERE conv IS NULL AND p.agent = x.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> x.id
                AND COALESCE(p.conversation_pos, p.id) >= pos AND (COALESCE(p.conversation_pos, p.id) > pos OR p.id > x.id)
            ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1)
        UNION ALL
        (SELECT p.id FROM archival p
            WHERE conv IS NOT NULL AND p.agent = x.agent AND engram_archival_conversation(p.metadata_json) = conv AND p.valid_to IS NULL AND p.id <> x.id
                AND COALESCE(p.conversation_pos, p.id) >= pos AND (COALESCE(p.conversation_pos, p.id) > pos OR p.id > x.id)
            ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1)
        UNION ALL
        (SELECT p.id FROM archival p
            WHERE conv IS NULL AND p.agent = x.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> x.id
                AND COALESCE(p.conversation_pos, p.id) >= pos AND (COALESCE(p.conversation_pos, p.id) > pos OR p.id > x.id)
            ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1)
        UNION ALL
        (SELECT p.id FROM archival p
            WHERE conv IS NOT NULL AND p.agent = x.agent AND engram_archival_conversation(p.metadata_json) = conv AND p.id <> x.id
                AND COALESCE(p.conversation_pos, p.id) >= pos AND (COALESCE(p.conversation_pos, p.id) > pos OR p.id > x.id)
            ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1);
END $$;

-- The entries a write rewrites: those next to where the written entry was
-- and is (as 0031 gave them) and the places after each of those. An
-- entry whose second neighbour before changed has its neighbour before
-- among the entries rewritten before.
CREATE OR REPLACE FUNCTION engram_archival_neighbours(a_agent TEXT, a_conv TEXT, a_pos BIGINT, a_id BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    WITH ring AS (    (SELECT p.id FROM archival p
        WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = a_conv AND p.valid_to IS NULL AND p.id <> a_id
            AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
    UNION ALL
    (SELECT n.id FROM archival n
        WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = a_conv AND n.valid_to IS NULL AND n.id <> a_id
            AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
        ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1))
    SELECT ring.id FROM ring UNION SELECT engram_archival_adjacent(ring.id) FROM ring WHERE ring.id IS NOT NULL;
END $$;

CREATE OR REPLACE FUNCTION engram_archival_dead_neighbours(a_agent TEXT, a_conv TEXT, a_pos BIGINT, a_id BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    WITH ring AS (    SELECT x.id FROM archival x WHERE x.valid_to IS NOT NULL AND x.id IN (
        (SELECT p.id FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = a_conv AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        UNION ALL
        (SELECT n.id FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = a_conv AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)))
    SELECT ring.id FROM ring UNION SELECT engram_archival_adjacent(ring.id) FROM ring WHERE ring.id IS NOT NULL;
END $$;

CREATE OR REPLACE FUNCTION engram_archival_stream_neighbours(a_agent TEXT, a_pos BIGINT, a_id BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    WITH ring AS (    (SELECT p.id FROM archival p
        WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> a_id
            AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
    UNION ALL
    (SELECT n.id FROM archival n
        WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.valid_to IS NULL AND n.id <> a_id
            AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
        ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
    UNION ALL
    SELECT x.id FROM archival x WHERE x.valid_to IS NOT NULL AND x.id IN (
        (SELECT p.id FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        UNION ALL
        (SELECT n.id FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)))
    SELECT ring.id FROM ring UNION SELECT engram_archival_adjacent(ring.id) FROM ring WHERE ring.id IS NOT NULL;
END $$;

CREATE OR REPLACE FUNCTION engram_archival_fts_neighbours() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    conv TEXT;
    moved BOOLEAN := TG_OP <> 'UPDATE' OR OLD.id <> NEW.id OR OLD.agent <> NEW.agent OR OLD.content IS DISTINCT FROM NEW.content
        OR OLD.metadata_json IS DISTINCT FROM NEW.metadata_json OR OLD.conversation_pos IS DISTINCT FROM NEW.conversation_pos;
BEGIN
    IF TG_OP = 'INSERT' AND engram_archival_deferred() THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        conv := engram_archival_conversation(OLD.metadata_json);
        IF conv IS NOT NULL AND OLD.valid_to IS NULL THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
            WHERE id IN (SELECT engram_archival_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id);
        END IF;
        IF conv IS NOT NULL AND moved THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
            WHERE id IN (SELECT engram_archival_dead_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_dead_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id);
        END IF;
    END IF;
    -- The entry itself is logged here too: its context may change where
    -- its indexed columns do not. An id changed by hand:
    -- search_text_archival_au logs the new id only, and a text cache would
    -- keep the old one.
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO search_text_log (kind, id) VALUES (2, NEW.id);
        IF OLD.id <> NEW.id THEN
            INSERT INTO search_text_log (kind, id) VALUES (2, OLD.id);
        END IF;
    END IF;
    -- Superseded or restored in a conversation: the places after it are
    -- rewritten too. A superseded entry after it has it as its neighbour
    -- before, and its second one before changes with the rule (live
    -- entries around a live entry, any around a superseded one).
    IF TG_OP = 'UPDATE' AND (OLD.valid_to IS NULL) <> (NEW.valid_to IS NULL)
            AND engram_archival_conversation(NEW.metadata_json) IS NOT NULL THEN
        UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
        WHERE id IN (SELECT engram_archival_adjacent(NEW.id));
        INSERT INTO search_text_log (kind, id) SELECT 2, engram_archival_adjacent(NEW.id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        conv := engram_archival_conversation(NEW.metadata_json);
        IF conv IS NOT NULL AND NEW.valid_to IS NULL THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
            WHERE id IN (SELECT engram_archival_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id);
        END IF;
        IF conv IS NOT NULL AND moved THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
            WHERE id IN (SELECT engram_archival_dead_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_dead_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id);
        END IF;
    END IF;
    RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION engram_archival_fts(a_id BIGINT, a_agent TEXT, a_content TEXT, a_tags TEXT, a_meta TEXT, a_pos BIGINT, a_live BOOLEAN, a_created BIGINT)
RETURNS tsvector LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    conv TEXT := engram_archival_conversation(a_meta);
    pos BIGINT := COALESCE(a_pos, a_id);
    rest tsvector := setweight(to_tsvector('english', a_tags), 'A') ||
        setweight(jsonb_to_tsvector('english', a_meta::jsonb, '["string", "numeric"]'), 'C') ||
        setweight(to_tsvector('english', engram_metadata_dates(a_meta)), 'C');
    own tsvector := setweight(engram_tsvector(a_content, 1048575 - pg_column_size(rest)), 'B') || rest;
    b BIGINT := engram_archival_step(a_id, a_agent, conv, pos, a_live, a_created, -1, NULL);
    n BIGINT := engram_archival_step(a_id, a_agent, conv, pos, a_live, a_created, 1, NULL);
    b2 BIGINT;
    v_before TEXT;
    v_after TEXT;
    bef tsvector;
    aft tsvector;
BEGIN
    SELECT engram_archival_step(x.id, x.agent, conv, COALESCE(x.conversation_pos, x.id), x.valid_to IS NULL, x.created_at, -1, a_id) INTO b2
        FROM archival x WHERE x.id = b;
    v_before := COALESCE((SELECT content FROM archival WHERE id = b2) || ' ', '') || COALESCE((SELECT content FROM archival WHERE id = b), '');
    v_after := COALESCE((SELECT content FROM archival WHERE id = n), '');
    bef := setweight(engram_tsvector(v_before, 1048575), 'D');
    aft := setweight(engram_tsvector(v_after, 1048575), 'D');
    RETURN CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END;
END $$;

-- The places before an entry: the live entry before it and any entry
-- before it, of its conversation (or its owner's stream), whatever the
-- time gap (deferred indexing's).
CREATE FUNCTION engram_archival_preceding(a_id BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$
DECLARE
    x archival%ROWTYPE;
    conv TEXT;
    pos BIGINT;
BEGIN
    SELECT * INTO x FROM archival WHERE id = a_id;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    conv := engram_archival_conversation(x.metadata_json);
    pos := COALESCE(x.conversation_pos, x.id);
    RETURN QUERY
        (SELECT p.id FROM archival p
            WHERE conv IS NULL AND p.agent = x.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> x.id
                AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < x.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        UNION ALL
        (SELECT p.id FROM archival p
            WHERE conv IS NOT NULL AND p.agent = x.agent AND engram_archival_conversation(p.metadata_json) = conv AND p.valid_to IS NULL AND p.id <> x.id
                AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < x.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        UNION ALL
        (SELECT p.id FROM archival p
            WHERE conv IS NULL AND p.agent = x.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> x.id
                AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < x.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        UNION ALL
        (SELECT p.id FROM archival p
            WHERE conv IS NOT NULL AND p.agent = x.agent AND engram_archival_conversation(p.metadata_json) = conv AND p.id <> x.id
                AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < x.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1);
END $$;

-- engram_archival_flush ends a deferral: it indexes the entries ids (the
-- transaction's inserts), the entries before them and the two entries
-- after each of these, logs them for the text caches, and turns the
-- deferral off. Inserts only add entries, so every entry whose context
-- they changed is so near one of them in the rows as they stand.
CREATE FUNCTION engram_archival_flush(ids BIGINT[]) RETURNS VOID LANGUAGE plpgsql AS $$
DECLARE
    todo BIGINT[];
BEGIN
    PERFORM set_config('engram.archival_deferred', 'off', true);
    SELECT array_agg(DISTINCT t) INTO todo FROM (
        SELECT unnest(ids) AS t
        UNION SELECT engram_archival_preceding(i) FROM unnest(ids) AS i) s WHERE t IS NOT NULL;
    FOR step IN 1..2 LOOP
        SELECT array_agg(DISTINCT t) INTO todo FROM (
            SELECT unnest(todo) AS t
            UNION SELECT engram_archival_adjacent(i) FROM unnest(todo) AS i) s WHERE t IS NOT NULL;
    END LOOP;
    UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
    WHERE id = ANY(todo);
    INSERT INTO search_text_log (kind, id) SELECT 2, unnest(todo);
END $$;

UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at);
