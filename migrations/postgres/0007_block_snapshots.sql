-- A block's snapshot moves to a table of its own (as on SQLite, migration
-- 0013): it changes only when a block compacts, and PostgreSQL copies a
-- row's every column into each new row version (a large snapshot stays in
-- TOAST, but its pointer and the row's rebuild cost each write).
CREATE TABLE block_snapshots (
    block_id     BIGINT PRIMARY KEY REFERENCES blocks (id) ON DELETE CASCADE,
    snapshot     BYTEA,
    snapshot_crc BIGINT
);
INSERT INTO block_snapshots (block_id, snapshot, snapshot_crc)
    SELECT id, snapshot, snapshot_crc FROM blocks;
ALTER TABLE blocks DROP COLUMN snapshot, DROP COLUMN snapshot_crc;
