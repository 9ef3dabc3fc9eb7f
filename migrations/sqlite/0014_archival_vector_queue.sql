-- Archival entries whose vector is still to be computed. A write that must
-- not wait for an embedder (a Log block's rotation, which runs in the
-- append's own transaction) stores its entries with a mark here, in that
-- transaction, and the store's embedder worker computes the vectors
-- afterwards (search.Index.FlushArchivalVectors; vector searches over
-- archival entries run it first). A mark outlives a crash with its rows.
CREATE TABLE vec_archival_dirty (
    id INTEGER PRIMARY KEY
);

CREATE TRIGGER vec_archival_dirty_ad AFTER DELETE ON archival BEGIN
    DELETE FROM vec_archival_dirty WHERE id = old.id;
END;
