-- Archival entries are indexed in their conversation, as messages are
-- since 0015: an entry whose metadata names a conversation also holds, as
-- two weaker columns, the text of the entry before it and the entry after
-- it in that conversation (bm25 weights 0.5 and 0.25 beside content's 1.0,
-- search.kinds). Search still returns the one entry, with its own content
-- and snippet. Nothing is stored twice: the table stays contentless.
--
-- The conversation is the metadata's "conversation" value, or else its
-- "session" value: a non-empty JSON string (a number, an object or "" names
-- none). Neighbours are the same owner's entries with the same
-- conversation, next below and next above by id (the order entries were
-- written), superseded or not: the conversation as it was recorded.
-- Entries that name no conversation are indexed as before, and with no
-- context in the table their bm25 scores are what they were (the empty
-- columns add no tokens to any length).
--
-- An entry's row changes when it changes and when a neighbour appears,
-- changes or goes; the triggers rewrite the affected rows (INSERT OR
-- REPLACE, which contentless_delete allows) and log them in
-- search_text_log (the default of its other columns), so the in-process
-- text cache re-reads them. fts_archival keeps 0019's rowids (owner number
-- * 2^40 + id) and checks.
--
-- Every statement that writes archival rows compiles the triggers it
-- fires, so they are kept to few subqueries: each neighbour is one seek
-- written out where it is used.

-- The conversation an entry names; the index seeks an owner's
-- conversation in id order. Queries reach the expression through
-- archival_conversations, whose column the planner matches to the index.
CREATE INDEX archival_conversation ON archival (agent, COALESCE(CASE json_type(metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(metadata_json, '$.conversation'), '') END,
             CASE json_type(metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(metadata_json, '$.session'), '') END), id);

CREATE VIEW archival_conversations AS
SELECT id, agent, content, tags_text, metadata_json, COALESCE(CASE json_type(metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(metadata_json, '$.conversation'), '') END,
             CASE json_type(metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(metadata_json, '$.session'), '') END) AS conversation
FROM archival;

-- fts_archival_source is what fts_archival holds for each entry.
CREATE VIEW fts_archival_source AS
SELECT a.id, a.agent,
    (SELECT no FROM fts_owners o WHERE o.name = a.agent) * 1099511627776 + a.id AS fts_rowid,
    a.content, a.tags_text,
    (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(a.metadata_json) WHERE atom IS NOT NULL) AS metadata_values,
    COALESCE((SELECT p.content FROM archival_conversations p WHERE p.agent = a.agent AND p.conversation = a.conversation
        AND p.id < a.id ORDER BY p.id DESC LIMIT 1), '') AS context_before,
    COALESCE((SELECT n.content FROM archival_conversations n WHERE n.agent = a.agent AND n.conversation = a.conversation
        AND n.id > a.id ORDER BY n.id LIMIT 1), '') AS context_after
FROM archival_conversations a;

DROP TRIGGER fts_archival_ai;
DROP TRIGGER fts_archival_ad;
DROP TRIGGER fts_archival_au;
DROP TABLE fts_archival;

CREATE VIRTUAL TABLE fts_archival USING fts5(
    content,
    tags_text,
    metadata_values,
    context_before,
    context_after,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- A new entry: index it, and rewrite its neighbours' rows.
CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id, (SELECT p.id FROM archival_conversations p WHERE p.agent = new.agent AND p.conversation = (COALESCE(CASE json_type(new.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.conversation'), '') END,
                 CASE json_type(new.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.session'), '') END))
                AND p.id < new.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival_conversations n WHERE n.agent = new.agent AND n.conversation = (COALESCE(CASE json_type(new.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.conversation'), '') END,
                 CASE json_type(new.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.session'), '') END))
                AND n.id > new.id ORDER BY n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN ((SELECT p.id FROM archival_conversations p WHERE p.agent = new.agent AND p.conversation = (COALESCE(CASE json_type(new.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.conversation'), '') END,
                 CASE json_type(new.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.session'), '') END))
                AND p.id < new.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival_conversations n WHERE n.agent = new.agent AND n.conversation = (COALESCE(CASE json_type(new.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.conversation'), '') END,
                 CASE json_type(new.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.session'), '') END))
                AND n.id > new.id ORDER BY n.id LIMIT 1));
END;

-- An entry gone: drop its row, rewrite its old neighbours' (now each
-- other's).
CREATE TRIGGER fts_archival_ad AFTER DELETE ON archival BEGIN
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN ((SELECT p.id FROM archival_conversations p WHERE p.agent = old.agent AND p.conversation = (COALESCE(CASE json_type(old.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.conversation'), '') END,
                 CASE json_type(old.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.session'), '') END))
                AND p.id < old.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival_conversations n WHERE n.agent = old.agent AND n.conversation = (COALESCE(CASE json_type(old.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.conversation'), '') END,
                 CASE json_type(old.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.session'), '') END))
                AND n.id > old.id ORDER BY n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN ((SELECT p.id FROM archival_conversations p WHERE p.agent = old.agent AND p.conversation = (COALESCE(CASE json_type(old.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.conversation'), '') END,
                 CASE json_type(old.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.session'), '') END))
                AND p.id < old.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival_conversations n WHERE n.agent = old.agent AND n.conversation = (COALESCE(CASE json_type(old.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.conversation'), '') END,
                 CASE json_type(old.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.session'), '') END))
                AND n.id > old.id ORDER BY n.id LIMIT 1));
END;

-- An entry changed (content, tags or metadata by the store; owner or id
-- by hand): rewrite its row and those of its old and new neighbours, and
-- log them all. The entry itself is logged here too: its context may
-- change where its indexed columns do not (metadata naming another
-- conversation with the same values). An id changed by hand:
-- search_text_archival_au logs the new id only, and a text cache would
-- keep the old one. valid_to / superseded_by updates (supersession) do
-- not touch the index.
CREATE TRIGGER fts_archival_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id, (SELECT p.id FROM archival_conversations p WHERE p.agent = old.agent AND p.conversation = (COALESCE(CASE json_type(old.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.conversation'), '') END,
                 CASE json_type(old.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.session'), '') END))
                AND p.id < old.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival_conversations n WHERE n.agent = old.agent AND n.conversation = (COALESCE(CASE json_type(old.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.conversation'), '') END,
                 CASE json_type(old.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.session'), '') END))
                AND n.id > old.id ORDER BY n.id LIMIT 1),
            (SELECT p.id FROM archival_conversations p WHERE p.agent = new.agent AND p.conversation = (COALESCE(CASE json_type(new.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.conversation'), '') END,
                 CASE json_type(new.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.session'), '') END))
                AND p.id < new.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival_conversations n WHERE n.agent = new.agent AND n.conversation = (COALESCE(CASE json_type(new.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.conversation'), '') END,
                 CASE json_type(new.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.session'), '') END))
                AND n.id > new.id ORDER BY n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (new.id, (SELECT p.id FROM archival_conversations p WHERE p.agent = old.agent AND p.conversation = (COALESCE(CASE json_type(old.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.conversation'), '') END,
                 CASE json_type(old.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.session'), '') END))
                AND p.id < old.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival_conversations n WHERE n.agent = old.agent AND n.conversation = (COALESCE(CASE json_type(old.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.conversation'), '') END,
                 CASE json_type(old.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(old.metadata_json, '$.session'), '') END))
                AND n.id > old.id ORDER BY n.id LIMIT 1),
            (SELECT p.id FROM archival_conversations p WHERE p.agent = new.agent AND p.conversation = (COALESCE(CASE json_type(new.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.conversation'), '') END,
                 CASE json_type(new.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.session'), '') END))
                AND p.id < new.id ORDER BY p.id DESC LIMIT 1),
            (SELECT n.id FROM archival_conversations n WHERE n.agent = new.agent AND n.conversation = (COALESCE(CASE json_type(new.metadata_json, '$.conversation') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.conversation'), '') END,
                 CASE json_type(new.metadata_json, '$.session') WHEN 'text' THEN NULLIF(json_extract(new.metadata_json, '$.session'), '') END))
                AND n.id > new.id ORDER BY n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id) SELECT 2, old.id WHERE old.id <> new.id;
END;

-- Re-index every entry with its context. (Text caches are built by the
-- processes that open the migrated file, from the rows: no log entries.)
INSERT INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
    SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source;
