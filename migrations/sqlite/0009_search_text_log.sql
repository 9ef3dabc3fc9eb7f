-- The full-text change log. Package search can keep an in-process copy of
-- the full-text index (IndexOptions.TextCache) that ranks with FTS5's exact
-- bm25 in a fraction of FTS5's time. Like search_vec_log for vectors, every
-- change to what the FTS5 tables index, or to the columns a search filters
-- on, is logged here in the writer's own transaction, so a cache in any
-- process catches up by replaying committed changes in commit order. The
-- triggers run whether or not any process keeps a cache.
--
-- kind is search.ContentType: 1 blocks, 2 archival, 4 messages. Blocks are
-- logged when their indexed text changes (fts_blocks_indexed, written by
-- the lazy re-index) or when they change owner, not on every block write.

CREATE TABLE search_text_log (
    seq  INTEGER PRIMARY KEY AUTOINCREMENT,
    kind INTEGER NOT NULL,
    id   INTEGER NOT NULL
);

-- Keep the last 100,000 entries; a cache further behind reloads. Trimmed
-- once per 1,024 entries so a write pays for it rarely.
CREATE TRIGGER search_text_log_trim AFTER INSERT ON search_text_log
WHEN new.seq % 1024 = 0 BEGIN
    DELETE FROM search_text_log WHERE seq <= new.seq - 100000;
END;

CREATE TRIGGER search_text_archival_ai AFTER INSERT ON archival BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (2, new.id);
END;
CREATE TRIGGER search_text_archival_au AFTER UPDATE ON archival BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (2, new.id);
END;
CREATE TRIGGER search_text_archival_ad AFTER DELETE ON archival BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (2, old.id);
END;

CREATE TRIGGER search_text_messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (4, new.id);
END;
CREATE TRIGGER search_text_messages_au AFTER UPDATE OF agent, content, created_at ON messages BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (4, new.id);
END;
CREATE TRIGGER search_text_messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (4, old.id);
END;

CREATE TRIGGER search_text_blocks_ai AFTER INSERT ON fts_blocks_indexed BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (1, new.id);
END;
CREATE TRIGGER search_text_blocks_au AFTER UPDATE ON fts_blocks_indexed BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (1, new.id);
END;
CREATE TRIGGER search_text_blocks_ad AFTER DELETE ON fts_blocks_indexed BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (1, old.id);
END;
CREATE TRIGGER search_text_blocks_owner AFTER UPDATE OF owner ON blocks
WHEN old.owner IS NOT new.owner BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (1, new.id);
END;
