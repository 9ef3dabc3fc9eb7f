-- Who merged each change that came from outside the store (MergeChanges:
-- an automerge-repo peer over engram serve's /sync, automerge JS, a
-- fork): such a change's commit message is the peer's and may name anyone
-- or nothing, so a block's history names, for the changes listed here, the
-- agent the store merged them as. hash is the change's hash (hex); a row
-- is written in the merge's write transaction and stays while the block
-- does (compactions and epochs keep the change in the block's history).
-- IF NOT EXISTS: tests that roll a store back to an older version keep it.
CREATE TABLE IF NOT EXISTS merged_changes (
    block_id INTEGER NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    hash     TEXT    NOT NULL,
    agent    TEXT    NOT NULL,
    PRIMARY KEY (block_id, hash)
) WITHOUT ROWID;
