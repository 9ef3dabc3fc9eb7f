-- Archival entries name their conversation as users label it (as on
-- SQLite, migration 0028; 0018 read only a non-empty string under
-- "conversation" or "session": a session numbered 3 named none).
--
-- An entry's conversation key is the first of its metadata's
-- "conversation", "conversation_id", "session", "session_id", "thread",
-- "thread_id" whose value is a string other than "" or a number, as that
-- value's JSON text (jsonb's): JSON values compare, so the number 3 and
-- the string "3" are different conversations. An object, an array, a
-- boolean, null or "" is passed over for the next key. A key over 1 KiB is
-- kept as its SHA-256 (0019). An entry naming none has no key (NULL) and
-- no neighbours: its tsvector is what 0018 gave it.
--
-- Neighbours (weight D in the tsvector, as in 0018): the same owner's
-- entries with the same key, next below and next above by id.
CREATE OR REPLACE FUNCTION engram_archival_conversation(meta TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN octet_length(c) > 1024 THEN 'sha256:' || encode(sha256(convert_to(c, 'UTF8')), 'hex') ELSE c END
    FROM (SELECT COALESCE(
            CASE WHEN jsonb_typeof(j -> 'conversation') IN ('string', 'number') AND j -> 'conversation' <> '""'::jsonb THEN (j -> 'conversation')::text END,
            CASE WHEN jsonb_typeof(j -> 'conversation_id') IN ('string', 'number') AND j -> 'conversation_id' <> '""'::jsonb THEN (j -> 'conversation_id')::text END,
            CASE WHEN jsonb_typeof(j -> 'session') IN ('string', 'number') AND j -> 'session' <> '""'::jsonb THEN (j -> 'session')::text END,
            CASE WHEN jsonb_typeof(j -> 'session_id') IN ('string', 'number') AND j -> 'session_id' <> '""'::jsonb THEN (j -> 'session_id')::text END,
            CASE WHEN jsonb_typeof(j -> 'thread') IN ('string', 'number') AND j -> 'thread' <> '""'::jsonb THEN (j -> 'thread')::text END,
            CASE WHEN jsonb_typeof(j -> 'thread_id') IN ('string', 'number') AND j -> 'thread_id' <> '""'::jsonb THEN (j -> 'thread_id')::text END,
            NULL) AS c
        FROM (SELECT meta::jsonb AS j) x) v
$$;

REINDEX INDEX archival_conversation;

-- archival_conversations (0018) reads the function: its definition stands.
-- archival_links gives each entry's neighbours, as on SQLite, for the text
-- cache; the triggers and engram_archival_fts (0018) find the same ones.
CREATE VIEW archival_links AS
SELECT a.id, a.agent,
    (SELECT p.id FROM archival_conversations p
        WHERE p.agent = a.agent AND p.conversation = a.conversation AND p.id < a.id ORDER BY p.id DESC LIMIT 1) AS before_id,
    (SELECT n.id FROM archival_conversations n
        WHERE n.agent = a.agent AND n.conversation = a.conversation AND n.id > a.id ORDER BY n.id LIMIT 1) AS after_id
FROM archival_conversations a;

-- Re-index the entries that name a conversation now (those naming a
-- string under "conversation" or "session" get what they had).
UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json)
WHERE engram_archival_conversation(metadata_json) IS NOT NULL;
