-- An archival entry's own conversation key, read from an index rather than
-- computed again.
--
-- conversation_key is a virtual column (0028): every read of it parses
-- metadata_json once per key it looks for, and a trigger's
-- new.conversation_key and a view's a.conversation_key are computed again
-- at every use. archival_links used it eight times a row
-- and the insert trigger eight times an insert. The index
-- archival_conversation_by_id holds each entry's key by id; the views read
-- their own row through it (INDEXED BY), and the triggers read the written
-- row's key from it by new.id. In an UPDATE trigger old.conversation_key
-- is the new row's when the metadata did not change (the key is a function
-- of metadata_json alone), and computed otherwise; a DELETE trigger still
-- computes it (the row is gone). No trigger writes archival.metadata_json,
-- so the row at new.id holds new's metadata when a trigger reads it.
--
-- The views and triggers are those of 0032 with only these references
-- changed.

CREATE INDEX archival_conversation_by_id ON archival (id, conversation_key);

DROP VIEW fts_archival_source;
DROP VIEW archival_links;

CREATE VIEW archival_links AS
SELECT a.id, a.agent,
    CASE WHEN a.valid_to IS NULL THEN (SELECT CASE WHEN a.conversation_key IS NOT NULL OR abs(CAST(p.created_at - a.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000 THEN p.id END FROM archival p WHERE p.agent = a.agent AND p.conversation_key IS a.conversation_key AND p.valid_to IS NULL AND p.id <> a.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        ELSE (SELECT CASE WHEN a.conversation_key IS NOT NULL OR abs(CAST(p.created_at - a.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000 THEN p.id END FROM archival p WHERE p.agent = a.agent AND p.conversation_key IS a.conversation_key AND p.id <> a.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END AS before_id,
    CASE WHEN a.valid_to IS NULL THEN (SELECT CASE WHEN a.conversation_key IS NOT NULL OR abs(CAST(n.created_at - a.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000 THEN n.id END FROM archival n WHERE n.agent = a.agent AND n.conversation_key IS a.conversation_key AND n.valid_to IS NULL AND n.id <> a.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
        ELSE (SELECT CASE WHEN a.conversation_key IS NOT NULL OR abs(CAST(n.created_at - a.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000 THEN n.id END FROM archival n WHERE n.agent = a.agent AND n.conversation_key IS a.conversation_key AND n.id <> a.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END AS after_id
FROM archival a INDEXED BY archival_conversation_by_id;

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

DROP TRIGGER fts_archival_ai;
CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id,
            CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND p.valid_to IS NULL AND p.id <> new.id
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
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) AND p.valid_to IS NULL AND p.id <> new.id
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
END;

DROP TRIGGER fts_archival_au;
CREATE TRIGGER fts_archival_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id,
            new.id,
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
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (new.id,
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
    INSERT INTO search_text_log (kind, id) SELECT 2, old.id WHERE old.id <> new.id;
END;

DROP TRIGGER fts_archival_live;
CREATE TRIGGER fts_archival_live AFTER UPDATE OF valid_to, conversation_pos ON archival
    WHEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) IS NOT NULL
        AND ((old.valid_to IS NULL) <> (new.valid_to IS NULL) OR old.conversation_pos IS NOT new.conversation_pos) BEGIN
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id,
            new.id,
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
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (new.id,
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
END;

DROP TRIGGER fts_archival_stream_ai;
CREATE TRIGGER fts_archival_stream_ai AFTER INSERT ON archival WHEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) IS NULL
    AND ((SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) IS NOT NULL
        OR abs(CAST((SELECT p.created_at FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) - new.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000
        OR abs(CAST((SELECT p.created_at FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) - new.created_at AS REAL)) BETWEEN 1000000000 AND 1800000000000) BEGIN
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
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
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
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
END;

DROP TRIGGER fts_archival_stream_au;
CREATE TRIGGER fts_archival_stream_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json, created_at, conversation_pos ON archival
    WHEN CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END IS NULL OR (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) IS NULL BEGIN
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id,
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
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (new.id,
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
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id,
            (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (new.id,
            (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key IS NULL AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1));
END;

