-- Document ids of blocks for automerge-repo peers (as SQLite's
-- 0018_sync_documents): one random 16-byte id (hex) per block epoch; a
-- row whose block, incarnation or epoch moved on names no document.
CREATE TABLE IF NOT EXISTS sync_documents (
    doc_id      TEXT   PRIMARY KEY,
    block_id    BIGINT NOT NULL,
    incarnation BIGINT NOT NULL,
    epoch       BIGINT NOT NULL,
    UNIQUE (block_id, incarnation, epoch)
);
