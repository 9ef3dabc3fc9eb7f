-- Messages are indexed in their conversation: a turn alone is a poor
-- document (the question "what did Caroline research?" is often answered
-- by a turn whose words are in the turn before it), so each message's
-- full-text entry also holds the message before it and the message after
-- it in the same batch (same agent and batch_id, seq - 1 and seq + 1) as
-- two weaker columns, ranked with bm25 weights 1.0 / 0.5 / 0.25
-- (search.kinds). Search still returns the one message; its snippet and
-- content are the message's own. Nothing is stored twice: the table is
-- contentless (contentless_delete lets a row be dropped by rowid, so a
-- neighbour's entry is rewritten without knowing what it held).
--
-- A message's entry changes when it changes and when a neighbour appears,
-- changes or goes; the triggers rewrite the affected entries and log them
-- in search_text_log, so the in-process text cache re-reads them too.
DROP TRIGGER fts_messages_ai;
DROP TRIGGER fts_messages_ad;
DROP TRIGGER fts_messages_au;
DROP TABLE fts_messages;

CREATE VIRTUAL TABLE fts_messages USING fts5(
    content,
    context_before,
    context_after,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- fts_messages_source is what fts_messages holds for each message. At the
-- ends of seq's range seq - 1 and seq + 1 overflow into REALs, and the
-- lowest seq's equals the seq itself: there is no neighbour there.
CREATE VIEW fts_messages_source AS
SELECT m.id, m.agent, m.batch_id, m.seq, m.content,
       COALESCE(p.content, '') AS context_before,
       COALESCE(n.content, '') AS context_after
FROM messages m
LEFT JOIN messages p ON p.agent = m.agent AND p.batch_id = m.batch_id AND p.seq = m.seq - 1
    AND m.seq > -9223372036854775808
LEFT JOIN messages n ON n.agent = m.agent AND n.batch_id = m.batch_id AND n.seq = m.seq + 1
    AND m.seq < 9223372036854775807;

-- A new message: index it, and rewrite its neighbours' entries.
CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid IN (
        SELECT id FROM messages WHERE agent = new.agent AND batch_id = new.batch_id
            AND seq IN (new.seq - 1, new.seq + 1));
    INSERT INTO fts_messages (rowid, content, context_before, context_after)
        SELECT id, content, context_before, context_after FROM fts_messages_source
        WHERE agent = new.agent AND batch_id = new.batch_id AND seq BETWEEN new.seq - 1 AND new.seq + 1;
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages WHERE agent = new.agent AND batch_id = new.batch_id
            AND seq IN (new.seq - 1, new.seq + 1);
END;

-- A message gone: drop its entry, rewrite its old neighbours'.
CREATE TRIGGER fts_messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid = old.id OR rowid IN (
        SELECT id FROM messages WHERE agent = old.agent AND batch_id = old.batch_id
            AND seq IN (old.seq - 1, old.seq + 1));
    INSERT INTO fts_messages (rowid, content, context_before, context_after)
        SELECT id, content, context_before, context_after FROM fts_messages_source
        WHERE agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1);
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages WHERE agent = old.agent AND batch_id = old.batch_id
            AND seq IN (old.seq - 1, old.seq + 1);
END;

-- A message changed (engram does not update messages; a row changed by
-- hand must still leave the index right): rewrite its entry and those of
-- its old and new neighbours.
CREATE TRIGGER fts_messages_au AFTER UPDATE OF agent, batch_id, seq, content ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid = old.id OR rowid IN (
        SELECT id FROM messages WHERE (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1)));
    INSERT INTO fts_messages (rowid, content, context_before, context_after)
        SELECT id, content, context_before, context_after FROM fts_messages_source
        WHERE id = new.id
            OR (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages
        WHERE (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1));
END;

-- Re-index every message with its context. (Text caches are built by the
-- processes that open the migrated file, from the rows: no log entries.)
INSERT INTO fts_messages (rowid, content, context_before, context_after)
    SELECT id, content, context_before, context_after FROM fts_messages_source;
