-- search_text_parts keeps blocks' partitions too (kind 1): the text cache's
-- analysis of an owner's indexed blocks (fts set by the lazy re-index,
-- which logs each block it indexes to search_text_log), caught up from the
-- log by the next process as archival entries' and messages' are (0047).
--
-- As there, a block whose indexed words change or go takes its owner's
-- part with it, so that words a block no longer holds do not outlive it
-- here: a re-index (an UPDATE that sets fts where it was set; a new
-- block's first index is added to the part from the log), a block's
-- delete, and a change of owner (the block moves from one owner's part to
-- the other's). The triggers take the part's lock shared first (0048).
CREATE FUNCTION engram_text_parts_blocks_gone() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(k)
        FROM (SELECT DISTINCT engram_text_part_key(1, owner) AS k FROM old_rows) o;
    DELETE FROM search_text_parts p USING (SELECT DISTINCT owner FROM old_rows) o
        WHERE p.kind = 1 AND p.owner = o.owner;
    RETURN NULL;
END $$;

CREATE FUNCTION engram_text_parts_blocks_changed() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(engram_text_part_key(1, OLD.owner));
    IF NEW.owner IS DISTINCT FROM OLD.owner THEN
        PERFORM pg_advisory_xact_lock_shared(engram_text_part_key(1, NEW.owner));
    END IF;
    DELETE FROM search_text_parts WHERE kind = 1 AND owner IN (OLD.owner, NEW.owner);
    RETURN NULL;
END $$;

CREATE TRIGGER search_text_parts_blocks_ad AFTER DELETE ON blocks
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_parts_blocks_gone();
-- Block writes set neither fts nor owner: an append fires nothing here.
CREATE TRIGGER search_text_parts_blocks_au AFTER UPDATE OF fts, owner ON blocks FOR EACH ROW
    WHEN (OLD.fts IS NOT NULL OR NEW.owner IS DISTINCT FROM OLD.owner)
    EXECUTE FUNCTION engram_text_parts_blocks_changed();
CREATE TRIGGER search_text_parts_blocks_truncate AFTER TRUNCATE ON blocks
    FOR EACH STATEMENT EXECUTE FUNCTION engram_text_parts_truncated('1');
