-- An archival entry's neighbours (the words at weight D in its tsvector,
-- 0018 and 0025) are live entries only, and a merged entry takes its
-- sources' place in their conversation, as on SQLite (its migration
-- archival_live_neighbours).
--
-- conversation_pos is an entry's place in its conversation, NULL for its
-- id (every entry written but a merged one). Consolidation (memory's
-- applyMerge) sets a merged entry's to the smallest place among its
-- sources that name the same conversation, so that its neighbours are
-- theirs, not the conversation's last turns. Entries are ordered by
-- (COALESCE(conversation_pos, id), id).
--
-- A live entry's neighbours are the same owner's live entries with the
-- same key, next below and next above in that order: a superseded entry
-- is no live entry's neighbour. A superseded entry (valid_to set) is
-- indexed as it stood in the conversation's history: its neighbours are
-- the entries next to it, superseded or not. So a supersession changes
-- the tsvector of the entry and of its live neighbours, never of other
-- superseded entries, and every write rewrites a bounded number of rows.
--
-- archival_links gives them (the text cache reads it);
-- engram_archival_fts and the triggers find the same ones.
-- archival_conversation holds the order for all entries,
-- archival_live_conversation for live ones.
ALTER TABLE archival ADD COLUMN conversation_pos BIGINT;

DROP INDEX archival_conversation;
CREATE INDEX archival_conversation ON archival
    (agent, engram_archival_conversation(metadata_json), COALESCE(conversation_pos, id), id);
CREATE INDEX archival_live_conversation ON archival
    (agent, engram_archival_conversation(metadata_json), COALESCE(conversation_pos, id), id) WHERE valid_to IS NULL;

-- The live neighbours of a place (owner, conversation, place, id), other
-- than the entry a_id itself.
CREATE FUNCTION engram_archival_neighbours(a_agent TEXT, a_conv TEXT, a_pos BIGINT, a_id BIGINT)
RETURNS SETOF BIGINT LANGUAGE sql STABLE AS $$
    (SELECT p.id FROM archival p
        WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = a_conv AND p.valid_to IS NULL AND p.id <> a_id
            AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
    UNION ALL
    (SELECT n.id FROM archival n
        WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = a_conv AND n.valid_to IS NULL AND n.id <> a_id
            AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
        ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
$$;

-- The superseded entries among the entries next to a place, other than
-- a_id: those whose own neighbours it is.
CREATE FUNCTION engram_archival_dead_neighbours(a_agent TEXT, a_conv TEXT, a_pos BIGINT, a_id BIGINT)
RETURNS SETOF BIGINT LANGUAGE sql STABLE AS $$
    SELECT x.id FROM archival x WHERE x.valid_to IS NOT NULL AND x.id IN (
        (SELECT p.id FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = a_conv AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        UNION ALL
        (SELECT n.id FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = a_conv AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1))
$$;

CREATE OR REPLACE VIEW archival_links AS
SELECT a.id, a.agent,
    CASE WHEN a.valid_to IS NULL THEN (SELECT p.id FROM archival p
        WHERE p.agent = a.agent AND engram_archival_conversation(p.metadata_json) = engram_archival_conversation(a.metadata_json)
            AND p.valid_to IS NULL
            AND p.id <> a.id AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id)
            AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
    ELSE (SELECT p.id FROM archival p
        WHERE p.agent = a.agent AND engram_archival_conversation(p.metadata_json) = engram_archival_conversation(a.metadata_json)
            AND p.id <> a.id AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id)
            AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END AS before_id,
    CASE WHEN a.valid_to IS NULL THEN (SELECT n.id FROM archival n
        WHERE n.agent = a.agent AND engram_archival_conversation(n.metadata_json) = engram_archival_conversation(a.metadata_json)
            AND n.valid_to IS NULL
            AND n.id <> a.id AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id)
            AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
        ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
    ELSE (SELECT n.id FROM archival n
        WHERE n.agent = a.agent AND engram_archival_conversation(n.metadata_json) = engram_archival_conversation(a.metadata_json)
            AND n.id <> a.id AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id)
            AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
        ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END AS after_id
FROM archival a;

-- An entry's tsvector: its own words (with its metadata's ISO dates as
-- words, as 0027), and when it names a conversation
-- its neighbours' (live ones for a live entry) at weight D (the 1 MB cap as in 0018).
-- Volatile, so that in a row trigger it sees the rows the same statement
-- wrote before.
CREATE FUNCTION engram_archival_fts(a_id BIGINT, a_agent TEXT, a_content TEXT, a_tags TEXT, a_meta TEXT, a_pos BIGINT, a_live BOOLEAN)
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
            setweight(jsonb_to_tsvector('english', a_meta::jsonb, '["string", "numeric"]'), 'C') ||
            setweight(to_tsvector('english', engram_metadata_dates(a_meta)), 'C') AS own,
        setweight(to_tsvector('english', COALESCE(CASE WHEN a_live THEN (SELECT p.content FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = c.conv AND p.valid_to IS NULL AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= c.pos AND (COALESCE(p.conversation_pos, p.id) < c.pos OR p.id < a_id)
                ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            ELSE (SELECT p.content FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = c.conv AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= c.pos AND (COALESCE(p.conversation_pos, p.id) < c.pos OR p.id < a_id)
                ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END, '')), 'D') AS bef,
        setweight(to_tsvector('english', COALESCE(CASE WHEN a_live THEN (SELECT n.content FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = c.conv AND n.valid_to IS NULL AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= c.pos AND (COALESCE(n.conversation_pos, n.id) > c.pos OR n.id > a_id)
                ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            ELSE (SELECT n.content FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = c.conv AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= c.pos AND (COALESCE(n.conversation_pos, n.id) > c.pos OR n.id > a_id)
                ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END, '')), 'D') AS aft
        FROM (SELECT engram_archival_conversation(a_meta) AS conv, COALESCE(a_pos, a_id) AS pos) c) parts
$$;

CREATE OR REPLACE FUNCTION engram_archival_fts_own() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fts := engram_archival_fts(NEW.id, NEW.agent, NEW.content, NEW.tags_text, NEW.metadata_json, NEW.conversation_pos, NEW.valid_to IS NULL);
    RETURN NEW;
END $$;

-- The live neighbours of where an entry was (when it was live) and of
-- where it is (when it is live) are rewritten, and logged for the text
-- cache; so are the superseded entries next to both places, unless the
-- entry only changed whether it is live (its text, their context, is
-- the same).
CREATE OR REPLACE FUNCTION engram_archival_fts_neighbours() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    conv TEXT;
    moved BOOLEAN := TG_OP <> 'UPDATE' OR OLD.id <> NEW.id OR OLD.agent <> NEW.agent OR OLD.content IS DISTINCT FROM NEW.content
        OR OLD.metadata_json IS DISTINCT FROM NEW.metadata_json OR OLD.conversation_pos IS DISTINCT FROM NEW.conversation_pos;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        conv := engram_archival_conversation(OLD.metadata_json);
        IF conv IS NOT NULL AND OLD.valid_to IS NULL THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL)
            WHERE id IN (SELECT engram_archival_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id);
        END IF;
        IF conv IS NOT NULL AND moved THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL)
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
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        conv := engram_archival_conversation(NEW.metadata_json);
        IF conv IS NOT NULL AND NEW.valid_to IS NULL THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL)
            WHERE id IN (SELECT engram_archival_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id);
        END IF;
        IF conv IS NOT NULL AND moved THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL)
            WHERE id IN (SELECT engram_archival_dead_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_dead_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id);
        END IF;
    END IF;
    RETURN NULL;
END $$;

-- Superseding an entry (valid_to set), restoring it (valid_to cleared) or
-- moving it (conversation_pos) changes its own tsvector (a live entry's
-- neighbours are live, a superseded one's all entries) and its live
-- neighbours', where it was and where it is. An entry naming no
-- conversation has neither: its supersession leaves its tsvector alone.
CREATE TRIGGER archival_fts_own_live BEFORE UPDATE OF valid_to, conversation_pos ON archival
    FOR EACH ROW WHEN (engram_archival_conversation(NEW.metadata_json) IS NOT NULL
        AND ((OLD.valid_to IS NULL) <> (NEW.valid_to IS NULL) OR OLD.conversation_pos IS DISTINCT FROM NEW.conversation_pos))
    EXECUTE FUNCTION engram_archival_fts_own();
CREATE TRIGGER archival_fts_neighbours_live AFTER UPDATE OF valid_to, conversation_pos ON archival
    FOR EACH ROW WHEN (engram_archival_conversation(NEW.metadata_json) IS NOT NULL
        AND ((OLD.valid_to IS NULL) <> (NEW.valid_to IS NULL) OR OLD.conversation_pos IS DISTINCT FROM NEW.conversation_pos))
    EXECUTE FUNCTION engram_archival_fts_neighbours();

DROP FUNCTION engram_archival_fts(BIGINT, TEXT, TEXT, TEXT, TEXT);
DROP FUNCTION engram_archival_neighbours(TEXT, TEXT, BIGINT);

-- Re-index the entries that name a conversation: a live entry's
-- neighbours now skip superseded entries.
UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL)
WHERE engram_archival_conversation(metadata_json) IS NOT NULL;
