-- Archival entries whose vector is still to be computed (as on SQLite,
-- migration 0014): a Log block's rotation stores its entries in the
-- append's own transaction without waiting for an embedder, and the
-- store's embedder worker computes their vectors afterwards.
CREATE TABLE vec_archival_dirty (
    id BIGINT PRIMARY KEY REFERENCES archival (id) ON DELETE CASCADE
);
