-- An archival entry is indexed with the two entries before it in its
-- conversation (or its owner's stream) and the one after it, not one on
-- each side: context_before is the entry before its entry before
-- (archival_links' before_id of its before_id) and a space, then its
-- entry before; context_after its entry after, as before. Each step is
-- archival_links' (0032): live entries around a live one, any around a
-- superseded one, stream neighbours within the time gap. The window after
-- stays one entry so that appending to a conversation rewrites two rows
-- (the new entry and the one before it), as it did: a second entry after
-- would rewrite a third (docs/retrieval.md weighs the two windows).
--
-- A write rewrites what it rewrote (the entries next to where the written
-- entry was and is) and the entries after those: archival_adjacent gives
-- an entry's places after it (the live entry after it and any entry after
-- it, of its key, whatever the gap), which hold every entry whose
-- before_id it is. An entry whose second entry before changed has its
-- entry before among the entries a write rewrote, so it is after one of
-- them.
--
-- The triggers are 0031's and 0032's with each set of entries they
-- rewrite and log widened so; fts_archival is remade and filled again.
CREATE VIEW archival_adjacent AS
SELECT a.id, (SELECT p.id FROM archival p WHERE p.agent = a.agent AND p.conversation_key IS a.conversation_key AND p.valid_to IS NULL AND p.id <> a.id
        AND COALESCE(p.conversation_pos, p.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) > COALESCE(a.conversation_pos, a.id) OR p.id > a.id)
        ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1) AS adj
FROM archival a INDEXED BY archival_conversation_by_id
UNION ALL
SELECT a.id, (SELECT p.id FROM archival p WHERE p.agent = a.agent AND p.conversation_key IS a.conversation_key AND p.id <> a.id
        AND COALESCE(p.conversation_pos, p.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) > COALESCE(a.conversation_pos, a.id) OR p.id > a.id)
        ORDER BY COALESCE(p.conversation_pos, p.id), p.id LIMIT 1) AS adj
FROM archival a INDEXED BY archival_conversation_by_id;

-- The places before an entry: the live entry before it and any entry
-- before it, of its key, whatever the gap (deferred indexing's).
CREATE VIEW archival_preceding AS
SELECT a.id, (SELECT p.id FROM archival p WHERE p.agent = a.agent AND p.conversation_key IS a.conversation_key AND p.valid_to IS NULL AND p.id <> a.id
        AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) AS adj
FROM archival a INDEXED BY archival_conversation_by_id
UNION ALL
SELECT a.id, (SELECT p.id FROM archival p WHERE p.agent = a.agent AND p.conversation_key IS a.conversation_key AND p.id <> a.id
        AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) AS adj
FROM archival a INDEXED BY archival_conversation_by_id;

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
    COALESCE((SELECT p2.content FROM archival p2 WHERE p2.id = (SELECT l2.before_id FROM archival_links l2 WHERE l2.id = l.before_id)) || ' ', '') ||
        COALESCE((SELECT p.content FROM archival p WHERE p.id = l.before_id), '') AS context_before,
    COALESCE((SELECT n.content FROM archival n WHERE n.id = l.after_id), '') AS context_after
FROM archival a JOIN archival_links l ON l.id = a.id;

-- The ids a trigger rewrites, gathered once per trigger and emptied before
-- it ends (empty between statements).
CREATE TABLE archival_touched (id INTEGER PRIMARY KEY);

-- Deferred indexing: while the row id -1 is here (never an archival id),
-- the insert triggers index nothing, and the transaction re-indexes once
-- at the end (the Go backend's FlushArchivalIndex, given the ids it
-- inserted) those entries, the entries before them
-- (archival_preceding) and the entries after all of these
-- (archival_adjacent), from the rows as they then stand: what the
-- triggers would have rewritten, entry by entry. A batch of a
-- conversation's entries so indexes each once, where each insert would
-- rewrite the entry before it again. Other writes are not deferred.
-- Empty between transactions.
CREATE TABLE archival_index_deferred (id INTEGER PRIMARY KEY);

DROP TRIGGER fts_archival_ai;
CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival WHEN NOT EXISTS (SELECT 1 FROM archival_index_deferred WHERE id = -1) BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT OR IGNORE INTO archival_touched (id) SELECT id FROM archival WHERE id IN (CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL));
    INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE (id IN (SELECT id FROM archival_touched) OR id = new.id);
    INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched;
    DELETE FROM archival_touched;
END;

-- Deferred (see archival_index_deferred): the entry is not indexed here.
CREATE TRIGGER fts_archival_deferred_ai AFTER INSERT ON archival WHEN EXISTS (SELECT 1 FROM archival_index_deferred WHERE id = -1) BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
END;

DROP TRIGGER fts_archival_ad;
CREATE TRIGGER fts_archival_ad AFTER DELETE ON archival BEGIN
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR IGNORE INTO archival_touched (id) SELECT id FROM archival WHERE id IN (CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL));
    INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (SELECT id FROM archival_touched);
    INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched;
    DELETE FROM archival_touched;
END;

DROP TRIGGER fts_archival_au;
CREATE TRIGGER fts_archival_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR IGNORE INTO archival_touched (id) SELECT id FROM archival WHERE id IN (new.id,
            CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL));
    INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (SELECT id FROM archival_touched) OR id = new.id;
    INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched;
    DELETE FROM archival_touched;
    INSERT INTO search_text_log (kind, id) SELECT 2, old.id WHERE old.id <> new.id;
END;

DROP TRIGGER fts_archival_live;
CREATE TRIGGER fts_archival_live AFTER UPDATE OF valid_to, conversation_pos ON archival
    WHEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) IS NOT NULL
        AND ((old.valid_to IS NULL) <> (new.valid_to IS NULL) OR old.conversation_pos IS NOT new.conversation_pos) BEGIN
    INSERT OR IGNORE INTO archival_touched (id) SELECT id FROM archival WHERE id IN (new.id,
            CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos));
    INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (SELECT id FROM archival_touched) OR id = new.id;
    INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched;
    DELETE FROM archival_touched;
END;

DROP TRIGGER fts_archival_stream_ai;
CREATE TRIGGER fts_archival_stream_ai AFTER INSERT ON archival WHEN NOT EXISTS (SELECT 1 FROM archival_index_deferred WHERE id = -1)
    AND (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) IS NULL
    AND ((SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) IS NOT NULL
        OR abs(CAST((SELECT p.created_at FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) - new.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000
        OR abs(CAST((SELECT p.created_at FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) - new.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000) BEGIN
    INSERT OR IGNORE INTO archival_touched (id) SELECT id FROM archival WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1),
            (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1));
    INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (SELECT id FROM archival_touched);
    INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched;
    DELETE FROM archival_touched;
END;

DROP TRIGGER fts_archival_stream_ad;
CREATE TRIGGER fts_archival_stream_ad AFTER DELETE ON archival WHEN old.conversation_key IS NULL BEGIN
    INSERT OR IGNORE INTO archival_touched (id) SELECT id FROM archival WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1),
            (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1));
    INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (SELECT id FROM archival_touched);
    INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched;
    DELETE FROM archival_touched;
END;

DROP TRIGGER fts_archival_stream_au;
CREATE TRIGGER fts_archival_stream_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json, created_at, conversation_pos ON archival
    WHEN CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END IS NULL OR (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) IS NULL BEGIN
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT OR IGNORE INTO archival_touched (id) SELECT id FROM archival WHERE id IN (new.id,
            (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1),
            (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1),
            (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1),
            (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1));
    INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (SELECT id FROM archival_touched);
    INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched;
    DELETE FROM archival_touched;
END;

DROP TRIGGER fts_archival_stream_live;
CREATE TRIGGER fts_archival_stream_live AFTER UPDATE OF valid_to ON archival
    WHEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) IS NULL AND CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END IS NULL AND (old.valid_to IS NULL) <> (new.valid_to IS NULL)
    AND (abs(CAST((SELECT p.created_at FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) - new.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000
        OR abs(CAST((SELECT n.created_at FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) - new.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000
        OR abs(CAST((SELECT p.created_at FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) - new.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000
        OR abs(CAST((SELECT n.created_at FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) - new.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000
        OR abs(CAST((SELECT p.created_at FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) - (SELECT n.created_at FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) AS REAL)) BETWEEN 1000000000 AND 1800000000000) BEGIN
    INSERT OR IGNORE INTO archival_touched (id) SELECT id FROM archival WHERE id IN (new.id,
            (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1));
    INSERT OR IGNORE INTO archival_touched (id) SELECT adj FROM archival_adjacent WHERE id IN (SELECT id FROM archival_touched) AND adj IS NOT NULL;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (SELECT id FROM archival_touched);
    INSERT INTO search_text_log (kind, id) SELECT 2, id FROM archival_touched;
    DELETE FROM archival_touched;
END;

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
INSERT INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
    SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source;
