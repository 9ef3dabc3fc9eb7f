-- Archival entries name their conversation as users label it (0023 read
-- only a non-empty string under "conversation" or "session"; a session
-- numbered 3 named none).
--
-- An entry's conversation key (the virtual column conversation_key) is
-- the first of its metadata's "conversation", "conversation_id",
-- "session", "session_id", "thread", "thread_id" whose value is a string
-- other than "" or a number, as that value's JSON text: JSON values
-- compare, so the number 3 and the string "3" are different conversations
-- (and 3 and 3.0 are too: numbers compare as written). An object, an
-- array, a boolean, null or "" is passed over for the next key. An entry
-- naming none has no key (NULL) and no neighbours.
--
-- Neighbours (the context_before and context_after columns, bm25 weights
-- 0.5 and 0.25 as in 0023): the same owner's entries with the same key,
-- next below and next above by id. archival_links gives each entry's
-- neighbours; every reader (these triggers, the text cache) goes through
-- it. The triggers rewrite the entry and its neighbours, as in 0023.
ALTER TABLE archival ADD COLUMN conversation_key TEXT GENERATED ALWAYS AS (COALESCE(CASE WHEN json_type(metadata_json, '$.conversation') IN ('text', 'integer', 'real') THEN NULLIF(metadata_json -> '$.conversation', '""') END,
        CASE WHEN json_type(metadata_json, '$.conversation_id') IN ('text', 'integer', 'real') THEN NULLIF(metadata_json -> '$.conversation_id', '""') END,
        CASE WHEN json_type(metadata_json, '$.session') IN ('text', 'integer', 'real') THEN NULLIF(metadata_json -> '$.session', '""') END,
        CASE WHEN json_type(metadata_json, '$.session_id') IN ('text', 'integer', 'real') THEN NULLIF(metadata_json -> '$.session_id', '""') END,
        CASE WHEN json_type(metadata_json, '$.thread') IN ('text', 'integer', 'real') THEN NULLIF(metadata_json -> '$.thread', '""') END,
        CASE WHEN json_type(metadata_json, '$.thread_id') IN ('text', 'integer', 'real') THEN NULLIF(metadata_json -> '$.thread_id', '""') END)) VIRTUAL;

DROP INDEX archival_conversation;
CREATE INDEX archival_conversation ON archival (agent, conversation_key, id);

DROP VIEW fts_archival_source;
DROP VIEW archival_conversations;

CREATE VIEW archival_conversations AS
SELECT id, agent, content, tags_text, metadata_json, created_at, conversation_key AS conversation
FROM archival;

CREATE VIEW archival_links AS
SELECT a.id, a.agent,
    (SELECT p.id FROM archival p WHERE p.agent = a.agent AND p.conversation_key = a.conversation_key
        AND p.id < a.id ORDER BY p.id DESC LIMIT 1) AS before_id,
    (SELECT n.id FROM archival n WHERE n.agent = a.agent AND n.conversation_key = a.conversation_key
        AND n.id > a.id ORDER BY n.id LIMIT 1) AS after_id
FROM archival a;

CREATE VIEW fts_archival_source AS
SELECT a.id, a.agent,
    (SELECT no FROM fts_owners o WHERE o.name = a.agent) * 1099511627776 + a.id AS fts_rowid,
    a.content, a.tags_text,
    (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(a.metadata_json) WHERE atom IS NOT NULL) AS metadata_values,
    COALESCE((SELECT p.content FROM archival p WHERE p.id = l.before_id), '') AS context_before,
    COALESCE((SELECT n.content FROM archival n WHERE n.id = l.after_id), '') AS context_after
FROM archival a JOIN archival_links l ON l.id = a.id;

DROP TRIGGER fts_archival_ai;
DROP TRIGGER fts_archival_ad;
DROP TRIGGER fts_archival_au;

CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id, (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id < new.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id > new.id ORDER BY n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id < new.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id > new.id ORDER BY n.id LIMIT 1));
END;

CREATE TRIGGER fts_archival_ad AFTER DELETE ON archival BEGIN
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id < old.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id > old.id ORDER BY n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id < old.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id > old.id ORDER BY n.id LIMIT 1));
END;

-- valid_to / superseded_by updates (supersession) do not touch the index.
-- The entry itself is logged here too (its context may change where its
-- indexed columns do not), and its old id when a hand edit changed it.
CREATE TRIGGER fts_archival_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id, (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id < new.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id > new.id ORDER BY n.id LIMIT 1),
            (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id < old.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id > old.id ORDER BY n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (new.id, (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id < new.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id > new.id ORDER BY n.id LIMIT 1),
            (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id < old.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id > old.id ORDER BY n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id) SELECT 2, old.id WHERE old.id <> new.id;
END;

-- Re-index every entry with its context. (Text caches are built by the
-- processes that open the migrated file, from the rows: no log entries.)
INSERT INTO fts_archival (fts_archival) VALUES ('delete-all');
INSERT INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
    SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source;
