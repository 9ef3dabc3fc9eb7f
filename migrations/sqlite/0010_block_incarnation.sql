-- incarnation tells a block from every earlier block with the same id.
-- SQLite reuses the rowid of the block deleted last, and a process's cache
-- recognises a block by its id, sequence, epoch and metadata version: a
-- block deleted and made again by another process could match all four
-- and be served from (and written through) the deleted block's document.
-- New blocks get a random non-zero value; 0 marks rows made before.
ALTER TABLE blocks ADD COLUMN incarnation INTEGER NOT NULL DEFAULT 0;
