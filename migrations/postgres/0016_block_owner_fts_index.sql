-- Migration 0015 gave archival entries and messages a GIN index over
-- (agent, fts); blocks still had only blocks_fts, so an agent's blocks
-- leg read a bitmap of every block matching the query in the store and
-- then kept the agent's own and shared blocks. A GIN index over (owner,
-- fts) answers "owner = $1 AND fts @@ query" inside the index; the
-- blocks shared with the agent are looked up by id (the leg lists them
-- from shares, search.Dialect.FullText in memory/postgres). As in 0015
-- the index needs btree_gin: without it the migration still succeeds
-- and the index is not made (create the extension and the index by
-- hand, as below, to get it later).
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS btree_gin;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'engram: btree_gin is not available (%); full-text searches over an agent''s blocks use blocks_fts', SQLERRM;
END $$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        CREATE INDEX IF NOT EXISTS blocks_owner_fts ON blocks USING GIN (owner, fts);
    END IF;
END $$;
