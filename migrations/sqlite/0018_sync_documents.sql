-- Document ids of blocks for automerge-repo peers (engram serve's /sync):
-- one random 16-byte id (hex) per block epoch, so a block's automerge:
-- URL says nothing of its owner or label, and a rebased block (a new
-- epoch, a new automerge document) gets a new one. incarnation tells the
-- block from an earlier one that had its rowid; a row whose block,
-- incarnation or epoch moved on names no document any more. IF NOT
-- EXISTS: tests that roll a store back to an older version keep it.
CREATE TABLE IF NOT EXISTS sync_documents (
    doc_id      TEXT    PRIMARY KEY,
    block_id    INTEGER NOT NULL,
    incarnation INTEGER NOT NULL,
    epoch       INTEGER NOT NULL,
    UNIQUE (block_id, incarnation, epoch)
);
