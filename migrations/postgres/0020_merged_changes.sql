-- Who merged each change that came from outside the store (as SQLite's
-- 0024_merged_changes): a block's history names, for the changes listed
-- here, the agent the store merged them as, whatever their commit
-- messages say.
CREATE TABLE IF NOT EXISTS merged_changes (
    block_id BIGINT NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    hash     TEXT   NOT NULL,
    agent    TEXT   NOT NULL,
    PRIMARY KEY (block_id, hash)
);
