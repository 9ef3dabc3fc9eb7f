-- An archival entry's neighbours (the context_before and context_after
-- columns, 0028) are live entries only, and a merged entry takes its
-- sources' place in their conversation.
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
-- is no live entry's neighbour (before, a live entry kept a superseded
-- neighbour's text as its context, and a consolidated conversation's
-- entries were indexed with the words of what consolidation replaced). A
-- superseded entry (valid_to set) is indexed as it stood in the
-- conversation's history: its neighbours are the entries next to it,
-- superseded or not. So a supersession changes the context of the entry
-- and of its live neighbours, never of other superseded entries (the
-- superseded entry's text is unchanged), and every write rewrites a
-- bounded number of rows; the superseded entries also keep their share
-- of the index's statistics (average length), as the live ones have.
--
-- archival_links gives each entry's neighbours; every reader (these
-- triggers, the text cache) goes through it. archival_conversation holds
-- the order for all entries, archival_live_conversation for live ones.
ALTER TABLE archival ADD COLUMN conversation_pos INTEGER;

DROP INDEX archival_conversation;
CREATE INDEX archival_conversation ON archival (agent, conversation_key, COALESCE(conversation_pos, id), id);
CREATE INDEX archival_live_conversation ON archival (agent, conversation_key, COALESCE(conversation_pos, id), id)
    WHERE valid_to IS NULL;


DROP VIEW archival_links;
CREATE VIEW archival_links AS
SELECT a.id, a.agent,
    CASE WHEN a.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = a.agent AND p.conversation_key = a.conversation_key AND p.valid_to IS NULL AND p.id <> a.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) ELSE (SELECT p.id FROM archival p WHERE p.agent = a.agent AND p.conversation_key = a.conversation_key AND p.id <> a.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END AS before_id,
    CASE WHEN a.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = a.agent AND n.conversation_key = a.conversation_key AND n.valid_to IS NULL AND n.id <> a.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) ELSE (SELECT n.id FROM archival n WHERE n.agent = a.agent AND n.conversation_key = a.conversation_key AND n.id <> a.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END AS after_id
FROM archival a;

DROP TRIGGER fts_archival_ai;
DROP TRIGGER fts_archival_ad;
DROP TRIGGER fts_archival_au;

CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id,
            CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL));
END;

CREATE TRIGGER fts_archival_ad AFTER DELETE ON archival BEGIN
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.valid_to IS NULL AND p.id <> old.id
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
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.valid_to IS NULL AND p.id <> old.id
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
END;

-- The entry itself is logged here too (its context may change where its
-- indexed columns do not), and its old id when a hand edit changed it.
CREATE TRIGGER fts_archival_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json ON archival BEGIN
    SELECT RAISE(ABORT, 'archival id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.agent);
    DELETE FROM fts_archival WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.agent) * 1099511627776 + old.id;
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id,
            new.id,
            CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (new.id,
            CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL));
    INSERT INTO search_text_log (kind, id) SELECT 2, old.id WHERE old.id <> new.id;
END;

-- Superseding an entry (valid_to set), restoring it (valid_to cleared) or
-- moving it (conversation_pos) changes its own context and its live
-- neighbours' on both sides, where it was and where it is; a move also
-- changes the context of the superseded entries next to both places. An
-- entry naming no conversation has none: its supersession leaves the
-- index alone. search_text_archival_au logs the entry as unchanged text;
-- it is logged again here, as changed.
CREATE TRIGGER fts_archival_live AFTER UPDATE OF valid_to, conversation_pos ON archival
    WHEN new.conversation_key IS NOT NULL
        AND ((old.valid_to IS NULL) <> (new.valid_to IS NULL) OR old.conversation_pos IS NOT new.conversation_pos) BEGIN
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN (new.id,
            new.id,
            CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos));
    INSERT INTO search_text_log (kind, id)
        SELECT 2, id FROM archival WHERE id IN (new.id,
            CASE WHEN new.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.valid_to IS NULL AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN new.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.valid_to IS NULL AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.valid_to IS NULL AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END,
            CASE WHEN old.valid_to IS NULL THEN (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.valid_to IS NULL AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END,
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = new.agent AND p.conversation_key = new.conversation_key AND p.id <> new.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(new.conversation_pos, new.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(new.conversation_pos, new.id) OR p.id < new.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = new.agent AND n.conversation_key = new.conversation_key AND n.id <> new.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(new.conversation_pos, new.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(new.conversation_pos, new.id) OR n.id > new.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key = old.conversation_key AND p.id <> old.id
            AND COALESCE(p.conversation_pos, p.id) <= COALESCE(old.conversation_pos, old.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(old.conversation_pos, old.id) OR p.id < old.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos),
            (SELECT x.id FROM archival x WHERE x.id = (SELECT n.id FROM archival n WHERE n.agent = old.agent AND n.conversation_key = old.conversation_key AND n.id <> old.id
            AND COALESCE(n.conversation_pos, n.id) >= COALESCE(old.conversation_pos, old.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(old.conversation_pos, old.id) OR n.id > old.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
            AND x.valid_to IS NOT NULL AND old.conversation_pos IS NOT new.conversation_pos));
END;

-- Re-index the entries that name a conversation: a live entry's context
-- now skips superseded entries. (Text caches are built by the processes
-- that open the migrated file, from the rows: no log entries.)
INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
    SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
    WHERE id IN (SELECT id FROM archival WHERE conversation_key IS NOT NULL);
