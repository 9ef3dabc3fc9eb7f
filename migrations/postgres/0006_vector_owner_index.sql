-- The vector cache sizes its partitions from one count per owner before it
-- loads them (search's vecCache.presize), and exact KNN scans without the
-- cache read one owner's rows: both want the owner indexed. pgvector's set-up
-- makes the same indexes; IF NOT EXISTS lets the two meet.
CREATE INDEX IF NOT EXISTS vec_blocks_owner ON vec_blocks (owner);
CREATE INDEX IF NOT EXISTS vec_archival_owner ON vec_archival (owner);
CREATE INDEX IF NOT EXISTS vec_messages_owner ON vec_messages (owner);
