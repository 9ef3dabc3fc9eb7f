-- Archival entries are indexed in their conversation, as messages are
-- since 0010 (and as on SQLite, migration 0023): an entry whose metadata
-- names a conversation also holds in its tsvector the words of the entry
-- before it and the entry after it in that conversation, at weight D
-- (content is B, tags A, metadata values C; ts_rank weighs D 0.1 beside
-- B's 0.4). Results, content and snippets stay the entry's own.
--
-- The conversation is the metadata's "conversation" value, or else its
-- "session" value: a non-empty JSON string (a number, an object or "" names
-- none). Neighbours are the same owner's entries with the same
-- conversation, next below and next above by id, superseded or not.
-- Entries that name no conversation keep exactly the tsvector the
-- generated column gave them.
--
-- The column was generated from the entry alone; now triggers keep it,
-- and rewrite a neighbour's when an entry arrives, changes or goes.
CREATE FUNCTION engram_archival_conversation(meta TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(
        CASE WHEN jsonb_typeof(meta::jsonb -> 'conversation') = 'string' THEN NULLIF(meta::jsonb ->> 'conversation', '') END,
        CASE WHEN jsonb_typeof(meta::jsonb -> 'session') = 'string' THEN NULLIF(meta::jsonb ->> 'session', '') END)
$$;

CREATE INDEX archival_conversation ON archival (agent, engram_archival_conversation(metadata_json), id);

-- The view through which queries (the text cache's included) reach the
-- indexed expression.
CREATE VIEW archival_conversations AS
SELECT id, agent, content, engram_archival_conversation(metadata_json) AS conversation
FROM archival;

-- Keeps the stored values and the indexes on fts (archival_fts, and
-- archival_agent_fts where 0015 could make it).
ALTER TABLE archival ALTER COLUMN fts DROP EXPRESSION IF EXISTS;

-- Volatile, so that in a row trigger it sees the rows the same statement
-- inserted before (a batch of entries is one INSERT). As for messages, a
-- tsvector holds at most 1 MB: context that would overflow it is left
-- out (the entry after first).
CREATE FUNCTION engram_archival_fts(a_id BIGINT, a_agent TEXT, a_content TEXT, a_tags TEXT, a_meta TEXT)
RETURNS tsvector LANGUAGE sql VOLATILE AS $$
    SELECT CASE
        WHEN conv IS NULL THEN own
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END
    FROM (SELECT c.conv,
        setweight(to_tsvector('english', a_content), 'B') ||
            setweight(to_tsvector('english', a_tags), 'A') ||
            setweight(jsonb_to_tsvector('english', a_meta::jsonb, '["string", "numeric"]'), 'C') AS own,
        setweight(to_tsvector('english', COALESCE((SELECT p.content FROM archival_conversations p
            WHERE p.agent = a_agent AND p.conversation = c.conv AND p.id < a_id ORDER BY p.id DESC LIMIT 1), '')), 'D') AS bef,
        setweight(to_tsvector('english', COALESCE((SELECT n.content FROM archival_conversations n
            WHERE n.agent = a_agent AND n.conversation = c.conv AND n.id > a_id ORDER BY n.id LIMIT 1), '')), 'D') AS aft
        FROM (SELECT engram_archival_conversation(a_meta) AS conv) c) parts
$$;

-- The neighbours of a position (owner, conversation, id) among the rows
-- there are now.
CREATE FUNCTION engram_archival_neighbours(a_agent TEXT, a_conv TEXT, a_id BIGINT)
RETURNS SETOF BIGINT LANGUAGE sql STABLE AS $$
    (SELECT p.id FROM archival_conversations p
        WHERE p.agent = a_agent AND p.conversation = a_conv AND p.id < a_id ORDER BY p.id DESC LIMIT 1)
    UNION ALL
    (SELECT n.id FROM archival_conversations n
        WHERE n.agent = a_agent AND n.conversation = a_conv AND n.id > a_id ORDER BY n.id LIMIT 1)
$$;

-- An entry's own tsvector is set before it is written (no second write).
CREATE FUNCTION engram_archival_fts_own() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fts := engram_archival_fts(NEW.id, NEW.agent, NEW.content, NEW.tags_text, NEW.metadata_json);
    RETURN NEW;
END $$;
CREATE TRIGGER archival_fts_own BEFORE INSERT OR UPDATE OF id, agent, content, tags_text, metadata_json ON archival
    FOR EACH ROW EXECUTE FUNCTION engram_archival_fts_own();

-- Its neighbours' (old and new) are rewritten after, and logged for the
-- text cache here too: search_text_archival_au logs every updated row,
-- but these rows change only in what their context is.
CREATE FUNCTION engram_archival_fts_neighbours() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    conv TEXT;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        conv := engram_archival_conversation(OLD.metadata_json);
        IF conv IS NOT NULL THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json)
            WHERE id IN (SELECT engram_archival_neighbours(OLD.agent, conv, OLD.id));
            INSERT INTO search_text_log (kind, id) SELECT 2, engram_archival_neighbours(OLD.agent, conv, OLD.id);
        END IF;
    END IF;
    -- The entry itself is logged here too: its context may change where
    -- its indexed columns do not (metadata naming another conversation
    -- with the same values). An id changed by hand: search_text_archival_au
    -- logs the new id only, and a text cache would keep the old one.
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO search_text_log (kind, id) VALUES (2, NEW.id);
        IF OLD.id <> NEW.id THEN
            INSERT INTO search_text_log (kind, id) VALUES (2, OLD.id);
        END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        conv := engram_archival_conversation(NEW.metadata_json);
        IF conv IS NOT NULL THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json)
            WHERE id IN (SELECT engram_archival_neighbours(NEW.agent, conv, NEW.id));
            INSERT INTO search_text_log (kind, id) SELECT 2, engram_archival_neighbours(NEW.agent, conv, NEW.id);
        END IF;
    END IF;
    RETURN NULL;
END $$;
-- Only the columns the context depends on: the rewrite sets fts alone,
-- which fires neither trigger again.
CREATE TRIGGER archival_fts_neighbours AFTER INSERT OR DELETE OR UPDATE OF id, agent, content, metadata_json ON archival
    FOR EACH ROW EXECUTE FUNCTION engram_archival_fts_neighbours();

-- Re-index the entries that name a conversation (the others' tsvectors
-- are already what the function gives them).
UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json)
WHERE engram_archival_conversation(metadata_json) IS NOT NULL;
