-- The full-text change log, as on SQLite (migration 0009): package search
-- keeps an in-process copy of the full-text index (IndexOptions.
-- TextCacheBytes) that ranks with BM25 in a fraction of a tsvector
-- query's time, and catches it up by replaying this log. Every change to
-- what full-text search reads is logged in the writer's own transaction;
-- writers hold the advisory write lock from their first statement to their
-- commit, so sequence numbers are handed out in commit order and a reader
-- that has seen seq N has seen every change up to N.
--
-- kind is search.ContentType: 1 blocks, 2 archival, 4 messages. A block
-- is logged when the lazy index (re)indexes it (any UPDATE that sets fts),
-- when it changes owner and when it goes, not on every write.

CREATE TABLE search_text_log (
    seq  BIGSERIAL PRIMARY KEY,
    kind BIGINT NOT NULL,
    id   BIGINT NOT NULL
);

-- Keep the last 100,000 entries; a cache further behind reloads. Trimmed
-- once per 1,024 entries so a write pays for it rarely.
CREATE FUNCTION engram_text_log_trim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM search_text_log WHERE seq <= NEW.seq - 100000;
    RETURN NULL;
END $$;
CREATE TRIGGER search_text_log_trim AFTER INSERT ON search_text_log
    FOR EACH ROW WHEN (NEW.seq % 1024 = 0) EXECUTE FUNCTION engram_text_log_trim();

-- Archival entries and messages: every inserted, updated or deleted row,
-- logged once per statement (a batch of 1,000 rows is one INSERT ... SELECT
-- into the log, not 1,000 trigger calls).
CREATE FUNCTION engram_text_log_new() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_text_log (kind, id) SELECT TG_ARGV[0]::bigint, id FROM new_rows;
    RETURN NULL;
END $$;
CREATE FUNCTION engram_text_log_old() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO search_text_log (kind, id) SELECT TG_ARGV[0]::bigint, id FROM old_rows;
    RETURN NULL;
END $$;

CREATE TRIGGER search_text_archival_ai AFTER INSERT ON archival
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_log_new('2');
CREATE TRIGGER search_text_archival_au AFTER UPDATE ON archival
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_log_new('2');
CREATE TRIGGER search_text_archival_ad AFTER DELETE ON archival
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_log_old('2');

CREATE TRIGGER search_text_messages_ai AFTER INSERT ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_log_new('4');
CREATE TRIGGER search_text_messages_au AFTER UPDATE ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_log_new('4');
CREATE TRIGGER search_text_messages_ad AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_log_old('4');

-- Blocks: per row (transition tables cannot go with a column list). The
-- store's block writes set neither fts nor owner, so they log nothing; the
-- lazy index sets fts for every block it indexes, and is logged whether or
-- not the tsvector came out different (the cache analyses the text itself).
CREATE FUNCTION engram_text_log_block() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        INSERT INTO search_text_log (kind, id) VALUES (1, OLD.id);
    ELSE
        INSERT INTO search_text_log (kind, id) VALUES (1, NEW.id);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER search_text_blocks_au AFTER UPDATE OF fts, owner ON blocks
    FOR EACH ROW EXECUTE FUNCTION engram_text_log_block();
CREATE TRIGGER search_text_blocks_ad AFTER DELETE ON blocks
    FOR EACH ROW EXECUTE FUNCTION engram_text_log_block();
