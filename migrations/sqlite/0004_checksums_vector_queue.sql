-- Torn or corrupt rows are reported, never skipped: every update row and
-- snapshot carries a CRC-32C of its bytes, checked on load. Rows written
-- before this migration have NULL and are not checked.
ALTER TABLE block_updates ADD COLUMN crc INTEGER;
ALTER TABLE blocks ADD COLUMN snapshot_crc INTEGER;

-- A write never waits for an embedder: writers only mark a block whose
-- text changed, by trigger, and its vector is computed afterwards (in the
-- background, and before any vector search over blocks, so searches still
-- see every persisted change).
CREATE TABLE vec_blocks_dirty (
    id INTEGER PRIMARY KEY
);

DROP TRIGGER fts_blocks_ai;
DROP TRIGGER fts_blocks_ad;
DROP TRIGGER fts_blocks_au;

CREATE TRIGGER fts_blocks_ai AFTER INSERT ON blocks BEGIN
    INSERT INTO fts_blocks (rowid, label, description, rendered)
    VALUES (new.id, new.label, new.description, new.rendered);
    INSERT INTO fts_blocks_indexed (id, label, description, rendered)
    VALUES (new.id, new.label, new.description, new.rendered);
    INSERT OR IGNORE INTO vec_blocks_dirty (id) VALUES (new.id);
END;

CREATE TRIGGER fts_blocks_ad AFTER DELETE ON blocks BEGIN
    INSERT INTO fts_blocks (fts_blocks, rowid, label, description, rendered)
    SELECT 'delete', id, label, description, rendered FROM fts_blocks_indexed WHERE id = old.id;
    DELETE FROM fts_blocks_indexed WHERE id = old.id;
    DELETE FROM fts_blocks_dirty WHERE id = old.id;
    DELETE FROM vec_blocks_dirty WHERE id = old.id;
END;

CREATE TRIGGER fts_blocks_au AFTER UPDATE OF label, description, rendered ON blocks BEGIN
    INSERT OR IGNORE INTO fts_blocks_dirty (id) VALUES (new.id);
    INSERT OR IGNORE INTO vec_blocks_dirty (id) VALUES (new.id);
END;
