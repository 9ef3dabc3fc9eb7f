-- History epochs (as SQLite's 0008_history_epochs): history_bytes counts
-- the change bytes of the current epoch; block_archive keeps each retired
-- epoch's whole document with its checksum, heads and last sequence.
ALTER TABLE blocks ADD COLUMN history_bytes BIGINT NOT NULL DEFAULT 0;
ALTER TABLE block_archive ADD COLUMN snapshot_crc BIGINT;
ALTER TABLE block_archive ADD COLUMN heads TEXT NOT NULL DEFAULT '';
ALTER TABLE block_archive ADD COLUMN last_seq BIGINT NOT NULL DEFAULT 0;
