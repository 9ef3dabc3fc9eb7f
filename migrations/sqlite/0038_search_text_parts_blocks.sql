-- search_text_parts keeps blocks' partitions too (kind 1): the text cache's
-- analysis of an owner's blocks as the full-text index holds them
-- (fts_blocks_indexed, written by the lazy re-index, which logs each
-- change to search_text_log), caught up from the log by the next process
-- as archival entries' and messages' are (0037).
--
-- As there, a block whose indexed words change or go takes its owner's
-- part with it, so that words a block no longer holds do not outlive it
-- here: a re-index writes the block's row of fts_blocks_indexed (INSERT OR
-- REPLACE: an insert over the row it replaces, whose delete fires no
-- trigger; a new block's first row replaces none, and the log adds it to
-- the part), a block's delete deletes it (fts_blocks_ad, after which its
-- owner is gone: the part is dropped from the block's own delete), and a
-- block that changes owner moves from one owner's part to the other's.
CREATE TRIGGER search_text_parts_blocks_ai BEFORE INSERT ON fts_blocks_indexed
WHEN EXISTS (SELECT 1 FROM fts_blocks_indexed WHERE id = new.id) BEGIN
    DELETE FROM search_text_parts WHERE kind = 1 AND owner = (SELECT owner FROM blocks WHERE id = new.id);
END;
CREATE TRIGGER search_text_parts_blocks_au AFTER UPDATE ON fts_blocks_indexed BEGIN
    DELETE FROM search_text_parts WHERE kind = 1 AND owner = (SELECT owner FROM blocks WHERE id = new.id);
END;
-- (A delete of a block's row while the block stays: a hand edit, or a
-- rebuild of the table by delete and insert.)
CREATE TRIGGER search_text_parts_blocks_indexed_ad AFTER DELETE ON fts_blocks_indexed BEGIN
    DELETE FROM search_text_parts WHERE kind = 1 AND owner = (SELECT owner FROM blocks WHERE id = old.id);
END;
CREATE TRIGGER search_text_parts_blocks_ad AFTER DELETE ON blocks BEGIN
    DELETE FROM search_text_parts WHERE kind = 1 AND owner = old.owner;
END;
CREATE TRIGGER search_text_parts_blocks_owner AFTER UPDATE OF owner ON blocks
WHEN old.owner IS NOT new.owner BEGIN
    DELETE FROM search_text_parts WHERE kind = 1 AND owner IN (old.owner, new.owner);
END;
