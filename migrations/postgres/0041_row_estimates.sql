-- Two costs of a write that grew with the store or with the planner's
-- guesses rather than with the rows written.
--
-- The set-returning functions that name an archival entry's neighbours
-- return at most a few ids, but a function that does not say so is taken
-- to return 1,000 rows. With that guess the planner joined their ids to
-- archival by hashing a sequential scan of the whole table (while the
-- table was small enough for that to look cheaper than 1,000 index
-- probes), in the trigger of every archival insert naming no
-- conversation: 160 µs of a 566 µs insert among 400 entries, and more as
-- the table grows towards where the guess flips. ROWS gives the planner
-- the real size, so the ids are looked up by primary key.
ALTER FUNCTION engram_archival_adjacent(BIGINT) ROWS 4;
ALTER FUNCTION engram_archival_dead_neighbours(TEXT, TEXT, BIGINT, BIGINT) ROWS 4;
ALTER FUNCTION engram_archival_neighbours(TEXT, TEXT, BIGINT, BIGINT) ROWS 4;
ALTER FUNCTION engram_archival_preceding(BIGINT) ROWS 4;
ALTER FUNCTION engram_archival_stream_neighbours(TEXT, BIGINT, BIGINT) ROWS 4;

-- A message's tsvector reads the two messages before it and the two after
-- it in one statement, not one statement each: a statement run from
-- PL/pgSQL costs about 10 µs however small, and a message's append
-- computes three tsvectors (its own and its two predecessors'). The texts
-- and what is made of them are those of migration 0033.
CREATE OR REPLACE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT) RETURNS tsvector LANGUAGE plpgsql AS $$
DECLARE
    s_b2 BIGINT := engram_seq_step(m_seq, -2);
    s_b BIGINT := engram_seq_step(m_seq, -1);
    s_a BIGINT := engram_seq_step(m_seq, 1);
    s_a2 BIGINT := engram_seq_step(m_seq, 2);
    b2_text TEXT;
    b_text TEXT;
    a_text TEXT;
    a2_text TEXT;
    own tsvector;
    bef tsvector;
    aft tsvector;
BEGIN
    -- (agent, batch_id, seq) is unique: each aggregate sees one row or none.
    SELECT max(content) FILTER (WHERE seq = s_b2), max(content) FILTER (WHERE seq = s_b),
            max(content) FILTER (WHERE seq = s_a), max(content) FILTER (WHERE seq = s_a2)
        INTO b2_text, b_text, a_text, a2_text
        FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq IN (s_b2, s_b, s_a, s_a2);
    own := setweight(engram_tsvector(m_content, 1048575 - 1024), 'A') ||
        setweight(to_tsvector('english', engram_message_date(m_created)), 'D');
    bef := setweight(engram_tsvector(COALESCE(b2_text || ' ', '') || COALESCE(b_text, ''), 1048575), 'B');
    aft := setweight(engram_tsvector(COALESCE(a_text, '') || COALESCE(' ' || a2_text, ''), 1048575), 'C');
    RETURN CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END;
END $$;
