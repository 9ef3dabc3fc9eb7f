-- An archival entry naming no conversation is indexed with the entries
-- written before and after it in its owner's stream of such entries (the
-- context_before and context_after columns, as a conversation's entries
-- are, 0028 and 0031), when they were written close to it in time.
--
-- The stream: the same owner's entries naming no conversation, in the
-- order a conversation's are ((COALESCE(conversation_pos, id), id)), live
-- entries around a live entry and any around a superseded one, as 0031.
-- The entry next to it on a side is its neighbour on that side when their
-- created_at (Unix nanoseconds) differ by at least 1 second (1000000000)
-- and at most 30 minutes (1800000000000); otherwise it has none there (the
-- entry beyond is not looked at). Notes written as a conversation goes are
-- seconds to minutes apart; a gap of more than 30 minutes is a new
-- conversation. Entries written less than a second apart were written by
-- a program in one go (a batch written with one timestamp, a document
-- load), not noted one after another, and are indexed alone: a load of
-- unrelated documents with each other's words as context ranks worse.
--
-- The difference is taken as a real (exact below 2^53 ns, about 104
-- days), so that no created_at makes abs() fail; one past int64 is far.
--
-- archival_links compares keys with IS (a NULL key is the stream), which
-- the index archival_conversation (and archival_live_conversation) serves
-- for NULL keys too.
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
FROM archival a;

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

-- The triggers of 0031 keep entries naming a conversation; these keep the
-- stream. A write rewrites (and logs for the text cache) the entry and the
-- entries next to where it was and where it is in its owner's stream,
-- live and superseded, whether or not within the gap (one outside it may
-- have had another neighbour before). An insert appended to the stream
-- (nothing after it) rewrites nothing unless the entry before it is near
-- it in time: loading a batch does not rewrite every entry twice.
CREATE TRIGGER fts_archival_stream_ai AFTER INSERT ON archival WHEN new.conversation_key IS NULL
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

CREATE TRIGGER fts_archival_stream_ad AFTER DELETE ON archival WHEN old.conversation_key IS NULL BEGIN
    INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
        SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
        WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> old.id
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
        SELECT 2, id FROM archival WHERE id IN ((SELECT p.id FROM archival p WHERE p.agent = old.agent AND p.conversation_key IS NULL AND p.valid_to IS NULL AND p.id <> old.id
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

-- A hand edit of created_at changes the entry's neighbours too; so does
-- moving an entry. The owner is numbered here too: this trigger may run
-- before fts_archival_au, and an entry indexed under no owner's number
-- would get a rowid of FTS5's choosing.
CREATE TRIGGER fts_archival_stream_au AFTER UPDATE OF id, agent, content, tags_text, metadata_json, created_at, conversation_pos ON archival
    WHEN old.conversation_key IS NULL OR new.conversation_key IS NULL BEGIN
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

-- Superseding or restoring an entry changes its own context and its live
-- neighbours' only when one of them is near it or they are near each
-- other (a batch's entries are near none): otherwise nothing is
-- rewritten or logged, and a text cache keeps its statistics.
CREATE TRIGGER fts_archival_stream_live AFTER UPDATE OF valid_to ON archival
    WHEN new.conversation_key IS NULL AND old.conversation_key IS NULL AND (old.valid_to IS NULL) <> (new.valid_to IS NULL)
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

-- Re-index the entries naming no conversation with their neighbours.
-- (Text caches are built by the processes that open the migrated file,
-- from the rows: no log entries.)
INSERT OR REPLACE INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after)
    SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source
    WHERE id IN (SELECT id FROM archival WHERE conversation_key IS NULL);
