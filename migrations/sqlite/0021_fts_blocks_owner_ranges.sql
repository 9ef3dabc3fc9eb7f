-- Migration 0019 keyed fts_archival and fts_messages by owner number ×
-- 2^40 + id so that an agent's full-text leg seeks to its own rows; blocks
-- kept their ids as rowids because a scope's blocks include the blocks
-- shared with it, so a search over blocks still visited every block match
-- in the store and filtered afterwards. fts_blocks is now keyed the same
-- way (owner numbers from fts_owners): a leg reads the agent's own range
-- plus, for each block shared with it, that one rowid in its owner's
-- range (search.Dialect.FullText, memory/sqlite). bm25's statistics stay
-- the whole table's and rowids are not in them, so scores and order are
-- what they were.
--
-- The index is contentless now (as fts_archival and fts_messages): a row
-- is deleted by rowid, and the rowid of a block's indexed text is found
-- from its owner. fts_blocks_indexed still holds what the index holds
-- (the text cache reads it, and the index is still filled lazily from
-- fts_blocks_dirty). A block that changes owner has its indexed text
-- moved to the new owner's range at once (fts_blocks_owner), so the
-- current owner always names a block's rowid.
INSERT OR IGNORE INTO fts_owners (name) SELECT DISTINCT owner FROM blocks ORDER BY 1;

DROP TRIGGER fts_blocks_ai;
DROP TRIGGER fts_blocks_ad;
DROP TABLE fts_blocks;

CREATE VIRTUAL TABLE fts_blocks USING fts5(
    label,
    description,
    rendered,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO fts_blocks (rowid, label, description, rendered)
SELECT (SELECT no FROM fts_owners WHERE name = b.owner) * 1099511627776 + i.id, i.label, i.description, i.rendered
FROM fts_blocks_indexed i JOIN blocks b ON b.id = i.id;

-- As in 0004, with rowids by owner.
CREATE TRIGGER fts_blocks_ai AFTER INSERT ON blocks BEGIN
    SELECT RAISE(ABORT, 'block id outside 0..2^40-1 (the full-text index keys rows by owner and id)')
        WHERE new.id NOT BETWEEN 0 AND 1099511627775;
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.owner);
    INSERT INTO fts_blocks (rowid, label, description, rendered)
    VALUES ((SELECT no FROM fts_owners WHERE name = new.owner) * 1099511627776 + new.id,
            new.label, new.description, new.rendered);
    INSERT INTO fts_blocks_indexed (id, label, description, rendered)
    VALUES (new.id, new.label, new.description, new.rendered);
    INSERT OR IGNORE INTO vec_blocks_dirty (id) VALUES (new.id);
END;

CREATE TRIGGER fts_blocks_ad AFTER DELETE ON blocks BEGIN
    DELETE FROM fts_blocks WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.owner) * 1099511627776 + old.id;
    DELETE FROM fts_blocks_indexed WHERE id = old.id;
    DELETE FROM fts_blocks_dirty WHERE id = old.id;
    DELETE FROM vec_blocks_dirty WHERE id = old.id;
END;

-- The indexed text (not the block's latest, which may be waiting in
-- fts_blocks_dirty) moves with the block.
CREATE TRIGGER fts_blocks_owner AFTER UPDATE OF owner ON blocks
WHEN old.owner IS NOT new.owner BEGIN
    INSERT OR IGNORE INTO fts_owners (name) VALUES (new.owner);
    DELETE FROM fts_blocks WHERE rowid = (SELECT no FROM fts_owners WHERE name = old.owner) * 1099511627776 + old.id;
    INSERT INTO fts_blocks (rowid, label, description, rendered)
    SELECT (SELECT no FROM fts_owners WHERE name = new.owner) * 1099511627776 + id, label, description, rendered
    FROM fts_blocks_indexed WHERE id = new.id;
END;
