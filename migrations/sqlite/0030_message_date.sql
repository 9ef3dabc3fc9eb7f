-- A message's full-text entry also holds its date: created_at (Unix
-- nanoseconds, UTC) as "8 May 2023" in a fourth column, date (bm25
-- weight 0.5, as an archival entry's metadata values), so that a question
-- naming the day, month or year it was said ("What did Jon find for his
-- store on 1 February, 2023?") finds it. A created_at before 1970 has no
-- date words. Otherwise as 0019; fts_messages is remade and filled again.
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
       COALESCE(p.content, '') AS context_before,
       COALESCE(n.content, '') AS context_after,
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
LEFT JOIN messages p ON p.agent = m.agent AND p.batch_id = m.batch_id AND p.seq = m.seq - 1
    AND m.seq > -9223372036854775808
LEFT JOIN messages n ON n.agent = m.agent AND n.batch_id = m.batch_id AND n.seq = m.seq + 1
    AND m.seq < 9223372036854775807;

CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
    SELECT RAISE(ABORT, 'message id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_messages WHERE rowid IN (
        SELECT (SELECT no FROM fts_owners WHERE name = new.agent) * 1099511627776 + id
        FROM messages WHERE agent = new.agent AND batch_id = new.batch_id
            AND seq IN (new.seq - 1, new.seq + 1));
    INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
        SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source
        WHERE agent = new.agent AND batch_id = new.batch_id AND seq BETWEEN new.seq - 1 AND new.seq + 1;
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages WHERE agent = new.agent AND batch_id = new.batch_id
            AND seq IN (new.seq - 1, new.seq + 1);
END;

CREATE TRIGGER fts_messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM fts_messages WHERE rowid IN (
        SELECT (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + id
        FROM (SELECT old.id AS id UNION ALL
              SELECT id FROM messages WHERE agent = old.agent AND batch_id = old.batch_id
                  AND seq IN (old.seq - 1, old.seq + 1)));
    INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
        SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source
        WHERE agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1);
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages WHERE agent = old.agent AND batch_id = old.batch_id
            AND seq IN (old.seq - 1, old.seq + 1);
END;

-- created_at too: it is indexed now.
CREATE TRIGGER fts_messages_au AFTER UPDATE OF id, agent, batch_id, seq, content, created_at ON messages BEGIN
    SELECT RAISE(ABORT, 'message id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_messages WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id
        OR rowid IN (
        SELECT (SELECT no FROM fts_owners o WHERE o.name = messages.agent) * 1099511627776 + id FROM messages
        WHERE (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1)));
    INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
        SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source
        WHERE id = new.id
            OR (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages
        WHERE (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1));
END;

INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
    SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source;

-- The text log counts a change of created_at as a change of the row's own
-- indexed text (0022's rule, with created_at among those columns).
DROP TRIGGER search_text_messages_au;
CREATE TRIGGER search_text_messages_au AFTER UPDATE ON messages BEGIN
    INSERT INTO search_text_log (kind, id, changed) VALUES (4, new.id,
        CASE WHEN old.id IS NOT new.id OR old.agent IS NOT new.agent OR old.batch_id IS NOT new.batch_id
            OR old.seq IS NOT new.seq OR old.content IS NOT new.content OR old.created_at IS NOT new.created_at
            THEN 2 ELSE 0 END);
    INSERT INTO search_text_log (kind, id) SELECT 4, old.id WHERE old.id IS NOT new.id;
END;

-- An archival entry's metadata values are indexed with the words of any
-- ISO 8601 date among them: a string beginning YYYY-MM-DD (a date or a
-- timestamp, month 01 to 12) is followed by "8 May 2023", as a message's
-- date is written, so the same question finds both. Otherwise as 0028's
-- view; the triggers read the view, and the entries whose metadata holds
-- such a string are indexed again.
DROP VIEW fts_archival_source;
CREATE VIEW fts_archival_source AS
SELECT a.id, a.agent,
    (SELECT no FROM fts_owners o WHERE o.name = a.agent) * 1099511627776 + a.id AS fts_rowid,
    a.content, a.tags_text,
    (SELECT COALESCE(group_concat(CASE WHEN type = 'text' AND value GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]*'
            AND substr(value, 6, 2) BETWEEN '01' AND '12'
        THEN value || ' ' || CAST(substr(value, 9, 2) AS INTEGER) || ' ' ||
            CASE substr(value, 6, 2)
                WHEN '01' THEN 'January' WHEN '02' THEN 'February' WHEN '03' THEN 'March'
                WHEN '04' THEN 'April' WHEN '05' THEN 'May' WHEN '06' THEN 'June'
                WHEN '07' THEN 'July' WHEN '08' THEN 'August' WHEN '09' THEN 'September'
                WHEN '10' THEN 'October' WHEN '11' THEN 'November' ELSE 'December' END || ' ' ||
            substr(value, 1, 4)
        ELSE value END, ' '), '') FROM json_tree(a.metadata_json) WHERE atom IS NOT NULL) AS metadata_values,
    COALESCE((SELECT p.content FROM archival p WHERE p.id = l.before_id), '') AS context_before,
    COALESCE((SELECT n.content FROM archival n WHERE n.id = l.after_id), '') AS context_after
FROM archival a JOIN archival_links l ON l.id = a.id;

DELETE FROM fts_archival WHERE rowid IN (
    SELECT s.fts_rowid FROM fts_archival_source s JOIN archival a ON a.id = s.id
    WHERE EXISTS (SELECT 1 FROM json_tree(a.metadata_json) WHERE type = 'text' AND value GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]*'));
INSERT INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
    SELECT s.fts_rowid, s.content, s.tags_text, s.metadata_values, s.context_before, s.context_after
    FROM fts_archival_source s JOIN archival a ON a.id = s.id
    WHERE EXISTS (SELECT 1 FROM json_tree(a.metadata_json) WHERE type = 'text' AND value GLOB '[0-9][0-9][0-9][0-9]-[01][0-9]-[0-3][0-9]*');
