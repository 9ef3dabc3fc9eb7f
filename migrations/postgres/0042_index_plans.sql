-- The statements of engram's PL/pgSQL functions are planned once per
-- session and the plan kept (after five runs PostgreSQL settles on a
-- generic plan, made again only when a table's statistics change). A
-- plan made while a table was empty or small, in a new database before
-- autovacuum first analyzed it, then stays in every session that made it:
-- for a join of an entry's few neighbour ids to archival the planner
-- chose a sequential scan of the whole table (cheaper than a few index
-- probes while the table held a few pages), and each archival insert of a
-- new database went on reading every row. 8,000 inserts from 8 writers
-- ran at 125 a second rather than 1,500, in 2 runs of 3, until an ANALYZE.
--
-- Every lookup these functions make has an index that serves it at any
-- size, so they plan with sequential scans off: a plan made on an empty
-- table uses the index too. A statement with no index to use still scans
-- (the setting only prices a sequential scan out of reach). The setting
-- holds for the call and the calls it makes; each function carries it so
-- that its plans are made under it whoever calls it first. A function
-- replaced later must say it again (CREATE OR REPLACE drops it); a test
-- holds every such function to it.
ALTER FUNCTION engram_agent_usage() SET enable_seqscan = off;
ALTER FUNCTION engram_agent_usage_row() SET enable_seqscan = off;
ALTER FUNCTION engram_archival_adjacent(BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_archival_dead_neighbours(TEXT, TEXT, BIGINT, BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_archival_flush(BIGINT[]) SET enable_seqscan = off;
ALTER FUNCTION engram_archival_fts(BIGINT, TEXT, TEXT, TEXT, TEXT, BIGINT, BOOLEAN, BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_archival_fts_neighbours() SET enable_seqscan = off;
ALTER FUNCTION engram_archival_fts_stream() SET enable_seqscan = off;
ALTER FUNCTION engram_archival_neighbours(TEXT, TEXT, BIGINT, BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_archival_preceding(BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_archival_step(BIGINT, TEXT, TEXT, BIGINT, BOOLEAN, BIGINT, INT, BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_archival_stream_neighbours(TEXT, BIGINT, BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_block_changed() SET enable_seqscan = off;
ALTER FUNCTION engram_log_trim(TEXT, BIGINT, BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_message_fts(TEXT, TEXT, BIGINT, TEXT, BIGINT) SET enable_seqscan = off;
ALTER FUNCTION engram_message_fts_neighbours() SET enable_seqscan = off;
ALTER FUNCTION engram_row_deleted() SET enable_seqscan = off;
ALTER FUNCTION engram_text_log_block() SET enable_seqscan = off;
ALTER FUNCTION engram_text_log_moved() SET enable_seqscan = off;
ALTER FUNCTION engram_text_log_new() SET enable_seqscan = off;
ALTER FUNCTION engram_text_log_old() SET enable_seqscan = off;
