-- An agent's full-text leg (search.Dialect.FullText) asks for
-- "agent = $1 AND fts @@ query". With one index per condition the planner
-- ANDs two bitmaps, and the GIN one holds every match in the store (the
-- EXPLAIN in docs/performance.md: 99,938 rows for a common word, to keep
-- the agent's 94). A GIN index over (agent, fts) answers both at once:
-- the agent's key and the query's terms intersect inside the index. Its
-- text column needs btree_gin's operator class (contrib; trusted, so a
-- database owner may create it). Without the extension the index is not
-- made and searches use the two indexes as before; the migration still
-- succeeds, and running it again later does not add the index (create
-- the extension and the two indexes by hand, as below, to get them).
DO $$
BEGIN
    CREATE EXTENSION IF NOT EXISTS btree_gin;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'engram: btree_gin is not available (%); full-text searches by agent use archival_agent and archival_fts apart', SQLERRM;
END $$;

DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin') THEN
        CREATE INDEX IF NOT EXISTS archival_agent_fts ON archival USING GIN (agent, fts);
        CREATE INDEX IF NOT EXISTS messages_agent_fts ON messages USING GIN (agent, fts);
    END IF;
END $$;
