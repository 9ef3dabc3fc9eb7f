-- Where migrations 0015 and 0016 made the GIN indexes over (agent, fts)
-- and (owner, fts), the single-column GIN indexes over fts are redundant:
-- a multicolumn GIN index answers a condition on any subset of its
-- columns as well as on all of them (its entries are keyed by column
-- and key), so a search of every agent's rows ("fts @@ query" alone)
-- reads the (agent, fts) index's fts entries. Every insert, and every
-- update of a tsvector (a message's neighbours' when it is appended, an
-- archival entry's when its stream moves), maintained both. Dropped only
-- where the multicolumn index exists and is valid: without btree_gin the
-- single-column ones are what full-text searches read, and an index an
-- operator built by hand (as 0015 says) with CREATE INDEX CONCURRENTLY
-- that failed or was cancelled is left invalid, never read by a plan.
CREATE FUNCTION engram_valid_index(name TEXT) RETURNS BOOLEAN LANGUAGE sql STABLE AS $$
    SELECT EXISTS (
        SELECT 1 FROM pg_index i
        JOIN pg_class c ON c.oid = i.indexrelid
        JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relname = name AND n.nspname = current_schema() AND i.indisvalid AND i.indisready)
$$;

DO $$
BEGIN
    IF engram_valid_index('archival_agent_fts') THEN
        DROP INDEX IF EXISTS archival_fts;
    END IF;
    IF engram_valid_index('messages_agent_fts') THEN
        DROP INDEX IF EXISTS messages_fts;
    END IF;
    IF engram_valid_index('blocks_owner_fts') THEN
        DROP INDEX IF EXISTS blocks_fts;
    END IF;
END $$;

DROP FUNCTION engram_valid_index(TEXT);
