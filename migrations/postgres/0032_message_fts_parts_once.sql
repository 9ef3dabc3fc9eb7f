-- A message's tsvector is made of three parts (its own words and date,
-- the previous message's words, the next one's). Written as one SELECT
-- over a subquery, PostgreSQL pulled the subquery up and computed each
-- part where the CASE named it: twice each, with the neighbours'
-- lookups. The neighbours' texts are now read first and each part made
-- once, by plain expressions: a part assigned from a query would come
-- back through a tuple, where a small tsvector gets a short header and
-- pg_column_size, which the cap compares, counts 3 bytes fewer. The same
-- value for every row, so nothing is re-indexed.
CREATE OR REPLACE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT) RETURNS tsvector LANGUAGE plpgsql AS $$
DECLARE
    b_text TEXT;
    a_text TEXT;
    own tsvector;
    bef tsvector;
    aft tsvector;
BEGIN
    SELECT content INTO b_text FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -1);
    SELECT content INTO a_text FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 1);
    own := setweight(engram_tsvector(m_content, 1048575 - 1024), 'A') ||
        setweight(to_tsvector('english', engram_message_date(m_created)), 'D');
    bef := setweight(engram_tsvector(COALESCE(b_text, ''), 1048575), 'B');
    aft := setweight(engram_tsvector(COALESCE(a_text, ''), 1048575), 'C');
    RETURN CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END;
END $$;
