-- History epochs: a block whose history outgrows its content is rebased
-- onto a fresh document (a new epoch); the retired epoch's whole document
-- is kept in block_archive for provenance (history, as-of views).
--
-- history_bytes: bytes of automerge changes written in the current epoch
-- (the estimate of its load cost that decides a rebase).
ALTER TABLE blocks ADD COLUMN history_bytes INTEGER NOT NULL DEFAULT 0;
ALTER TABLE block_archive ADD COLUMN snapshot_crc INTEGER;
ALTER TABLE block_archive ADD COLUMN heads TEXT NOT NULL DEFAULT '';
ALTER TABLE block_archive ADD COLUMN last_seq INTEGER NOT NULL DEFAULT 0;
