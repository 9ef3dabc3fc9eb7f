-- An agent's full-text search ranked every match in the store and then
-- kept the agent's ("cache" matched 49,394 rows store-wide, 46 of the
-- agent's). FTS5 cannot filter by a column of another table before it
-- ranks, but it does seek by rowid: fts_archival and fts_messages now key
-- each row by its owner's number times 2^40 plus its id, so one agent's
-- rows are one rowid range, and a MATCH with "rowid BETWEEN" visits and
-- ranks only those (search.Dialect.FullText, memory/sqlite).
--
-- An owner term in the index was the other way, but bm25 counts every
-- column's tokens in a row's length, so scores would change; rowids are
-- not in bm25 (row count, lengths and term frequencies are the same), so
-- scores and order are exactly what they were. fts_blocks keeps block ids
-- as rowids: a search over blocks also sees blocks shared with the agent.
--
-- fts_owners numbers each owner once (never reused). Ids must be in
-- 0 .. 2^40 - 1 (INTEGER PRIMARY KEY ids grow from 1); a row outside
-- would land in another owner's range, so its insert fails.
CREATE TABLE fts_owners (
    no   INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE
);

INSERT INTO fts_owners (name)
    SELECT agent FROM archival UNION SELECT agent FROM messages ORDER BY 1;

DROP TRIGGER fts_archival_ai;
DROP TRIGGER fts_archival_ad;
DROP TRIGGER fts_archival_au;
DROP TABLE fts_archival;

CREATE VIRTUAL TABLE fts_archival USING fts5(
    content,
    tags_text,
    metadata_values,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO fts_archival (rowid, content, tags_text, metadata_values)
SELECT (SELECT no FROM fts_owners WHERE name = archival.agent) * 1099511627776 + id, content, tags_text,
       (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(archival.metadata_json) WHERE atom IS NOT NULL)
FROM archival;

CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT INTO fts_archival (rowid, content, tags_text, metadata_values)
    VALUES ((SELECT no FROM fts_owners WHERE name = new.agent) * 1099511627776 + new.id, new.content, new.tags_text,
            (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(new.metadata_json) WHERE atom IS NOT NULL));
END;

CREATE TRIGGER fts_archival_ad AFTER DELETE ON archival BEGIN
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
END;

-- valid_to / superseded_by updates (supersession) do not touch the index;
-- a new owner or id moves the row to another rowid.
CREATE TRIGGER fts_archival_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT INTO fts_archival (rowid, content, tags_text, metadata_values)
    VALUES ((SELECT no FROM fts_owners WHERE name = new.agent) * 1099511627776 + new.id, new.content, new.tags_text,
            (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(new.metadata_json) WHERE atom IS NOT NULL));
END;

DROP TRIGGER fts_messages_ai;
DROP TRIGGER fts_messages_ad;
DROP TRIGGER fts_messages_au;
DROP VIEW fts_messages_source;
DROP TABLE fts_messages;

CREATE VIRTUAL TABLE fts_messages USING fts5(
    content,
    context_before,
    context_after,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

-- As in 0015, plus fts_rowid, the message's rowid in fts_messages.
CREATE VIEW fts_messages_source AS
SELECT m.id, m.agent, m.batch_id, m.seq, m.content,
       COALESCE(p.content, '') AS context_before,
       COALESCE(n.content, '') AS context_after,
       (SELECT no FROM fts_owners o WHERE o.name = m.agent) * 1099511627776 + m.id AS fts_rowid
FROM messages m
LEFT JOIN messages p ON p.agent = m.agent AND p.batch_id = m.batch_id AND p.seq = m.seq - 1
    AND m.seq > -9223372036854775808
LEFT JOIN messages n ON n.agent = m.agent AND n.batch_id = m.batch_id AND n.seq = m.seq + 1
    AND m.seq < 9223372036854775807;

-- The triggers of 0015, with rowids by owner.
CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
    SELECT RAISE(ABORT, 'message id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_messages WHERE rowid IN (
        SELECT (SELECT no FROM fts_owners WHERE name = new.agent) * 1099511627776 + id
        FROM messages WHERE agent = new.agent AND batch_id = new.batch_id
            AND seq IN (new.seq - 1, new.seq + 1));
    INSERT INTO fts_messages (rowid, content, context_before, context_after)
        SELECT fts_rowid, content, context_before, context_after FROM fts_messages_source
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
    INSERT INTO fts_messages (rowid, content, context_before, context_after)
        SELECT fts_rowid, content, context_before, context_after FROM fts_messages_source
        WHERE agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1);
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages WHERE agent = old.agent AND batch_id = old.batch_id
            AND seq IN (old.seq - 1, old.seq + 1);
END;

CREATE TRIGGER fts_messages_au AFTER UPDATE OF id, agent, batch_id, seq, content ON messages BEGIN
    SELECT RAISE(ABORT, 'message id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_messages WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id
        OR rowid IN (
        SELECT (SELECT no FROM fts_owners o WHERE o.name = messages.agent) * 1099511627776 + id FROM messages
        WHERE (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1)));
    INSERT INTO fts_messages (rowid, content, context_before, context_after)
        SELECT fts_rowid, content, context_before, context_after FROM fts_messages_source
        WHERE id = new.id
            OR (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 4, id FROM messages
        WHERE (agent = old.agent AND batch_id = old.batch_id AND seq IN (old.seq - 1, old.seq + 1))
            OR (agent = new.agent AND batch_id = new.batch_id AND seq IN (new.seq - 1, new.seq + 1));
END;

INSERT INTO fts_messages (rowid, content, context_before, context_after)
    SELECT fts_rowid, content, context_before, context_after FROM fts_messages_source;
