-- A message's context columns hold the two messages before it and the two
-- after it in its batch, not one: context_before is the message at seq - 2
-- and the one at seq - 1, context_after the one at seq + 1 and the one at
-- seq + 2, each followed (before) or preceded (after) by a space where it
-- exists. A question's words are often two turns from the turn that
-- answers it (the question, the answer, the follow-up), and held out by
-- conversation two turns on each side find more evidence than one (see
-- docs/retrieval.md). A step past either end of int64 has no message.
--
-- A message arriving, changing or going re-indexes the messages up to two
-- seqs from it, and logs them for the text cache. An insert indexes the
-- message itself by id and deletes and indexes the same neighbours by the
-- same seq list: a BETWEEN range would index again, without deleting it
-- first, a message a hand edit left at a real seq inside the range (and
-- miss one at a text seq). Otherwise as 0030; fts_messages is remade and
-- filled again.
DROP TRIGGER fts_messages_ai;
DROP TRIGGER fts_messages_ad;
DROP TRIGGER fts_messages_au;
DROP VIEW fts_messages_source;
DROP TABLE fts_messages;

CREATE VIRTUAL TABLE fts_messages USING fts5(
    content,
    context_before,
    context_after,
    date,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE VIEW fts_messages_source AS
SELECT m.id, m.agent, m.batch_id, m.seq, m.content,
       COALESCE(p2.content || ' ', '') || COALESCE(p.content, '') AS context_before,
       COALESCE(n.content, '') || COALESCE(' ' || n2.content, '') AS context_after,
       (CASE WHEN m.created_at >= 0 THEN
            CAST(strftime('%d', m.created_at / 1000000000, 'unixepoch') AS INTEGER) || ' ' ||
            CASE strftime('%m', m.created_at / 1000000000, 'unixepoch')
                WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March'
                WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June'
                WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September'
                WHEN '10' THEN 'October' WHEN '11' THEN 'November' ELSE 'December' END || ' ' ||
            strftime('%Y', m.created_at / 1000000000, 'unixepoch')
        ELSE '' END) AS date,
       (SELECT no FROM fts_owners o WHERE o.name = m.agent) * 1099511627776 + m.id AS fts_rowid
FROM messages m
LEFT JOIN messages p2 ON p2.agent = m.agent AND p2.batch_id = m.batch_id AND p2.seq = m.seq - 2
    AND m.seq > -9223372036854775807
LEFT JOIN messages p ON p.agent = m.agent AND p.batch_id = m.batch_id AND p.seq = m.seq - 1
    AND m.seq > -9223372036854775808
LEFT JOIN messages n ON n.agent = m.agent AND n.batch_id = m.batch_id AND n.seq = m.seq + 1
    AND m.seq < 9223372036854775807
LEFT JOIN messages n2 ON n2.agent = m.agent AND n2.batch_id = m.batch_id AND n2.seq = m.seq + 2
    AND m.seq < 9223372036854775806;

CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
    SELECT RAISE(ABORT, 'message id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_messages WHERE rowid IN (
        SELECT (SELECT no FROM fts_owners WHERE name = new.agent) * 1099511627776 + id
        FROM messages WHERE agent = new.agent AND batch_id = new.batch_id
            AND seq IN (new.seq - 2, new.seq - 1, new.seq + 1, new.seq + 2));
    INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
        SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source
        WHERE id = new.id
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 2, new.seq - 1, new.seq + 1, new.seq + 2));
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages WHERE agent = new.agent AND batch_id = new.batch_id
            AND seq IN (new.seq - 2, new.seq - 1, new.seq + 1, new.seq + 2);
END;

CREATE TRIGGER fts_messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid IN (
        SELECT (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + id
        FROM (SELECT old.id AS id UNION ALL
              SELECT id FROM messages WHERE agent = old.agent AND batch_id = old.batch_id
                  AND seq IN (old.seq - 2, old.seq - 1, old.seq + 1, old.seq + 2)));
    INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
        SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source
        WHERE agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 2, old.seq - 1, old.seq + 1, old.seq + 2);
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages WHERE agent = old.agent AND batch_id = old.batch_id
            AND seq IN (old.seq - 2, old.seq - 1, old.seq + 1, old.seq + 2);
END;

CREATE TRIGGER fts_messages_au AFTER UPDATE OF id, agent, batch_id, seq, content, created_at ON messages BEGIN
    SELECT RAISE(ABORT, 'message id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_messages WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id
        OR rowid IN (
        SELECT (SELECT no FROM fts_owners o WHERE o.name = messages.agent) * 1099511627776 + id FROM messages
        WHERE (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 2, old.seq - 1, old.seq + 1, old.seq + 2))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 2, new.seq - 1, new.seq + 1, new.seq + 2)));
    INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
        SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source
        WHERE id = new.id
            OR (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 2, old.seq - 1, old.seq + 1, old.seq + 2))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 2, new.seq - 1, new.seq + 1, new.seq + 2));
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages
        WHERE (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 2, old.seq - 1, old.seq + 1, old.seq + 2))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 2, new.seq - 1, new.seq + 1, new.seq + 2));
END;

INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
    SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source;
