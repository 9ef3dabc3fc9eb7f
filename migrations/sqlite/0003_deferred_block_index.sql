-- Block text is re-indexed lazily. Re-tokenising a whole block (old and new
-- text) on every persisted change cost ~155 µs of a ~200 µs write (measured
-- in bench/); a block appended to 100 times between searches now costs one
-- re-index. Writers only mark the block dirty; package search re-indexes the
-- dirty blocks, in one write transaction, before any search over blocks, so
-- every search still sees every persisted change.
--
-- fts_blocks_indexed holds exactly what fts_blocks has indexed for each
-- block: an external-content FTS5 'delete' needs the old values, which
-- blocks no longer has once a writer changed it.

CREATE TABLE fts_blocks_dirty (
    id INTEGER PRIMARY KEY
);

CREATE TABLE fts_blocks_indexed (
    id          INTEGER PRIMARY KEY,
    label       TEXT NOT NULL,
    description TEXT NOT NULL,
    rendered    TEXT NOT NULL
);

INSERT INTO fts_blocks_indexed (id, label, description, rendered)
SELECT id, label, description, rendered FROM blocks;

DROP TRIGGER fts_blocks_ai;
DROP TRIGGER fts_blocks_ad;
DROP TRIGGER fts_blocks_au;

CREATE TRIGGER fts_blocks_ai AFTER INSERT ON blocks BEGIN
    INSERT INTO fts_blocks (rowid, label, description, rendered)
    VALUES (new.id, new.label, new.description, new.rendered);
    INSERT INTO fts_blocks_indexed (id, label, description, rendered)
    VALUES (new.id, new.label, new.description, new.rendered);
END;

CREATE TRIGGER fts_blocks_ad AFTER DELETE ON blocks BEGIN
    INSERT INTO fts_blocks (fts_blocks, rowid, label, description, rendered)
    SELECT 'delete', id, label, description, rendered FROM fts_blocks_indexed WHERE id = old.id;
    DELETE FROM fts_blocks_indexed WHERE id = old.id;
    DELETE FROM fts_blocks_dirty WHERE id = old.id;
END;

CREATE TRIGGER fts_blocks_au AFTER UPDATE OF label, description, rendered ON blocks BEGIN
    INSERT OR IGNORE INTO fts_blocks_dirty (id) VALUES (new.id);
END;
