-- A message's neighbours are found in its batch within a range of places,
-- [seq - 2, seq + 2], so that the unique index (agent, batch_id, seq)
-- reads those five places at most, however long the batch.
--
-- Found by (agent, batch_id) and seq IN (the four places), the planner
-- weighed four probes of the unique index against one scan of the
-- (agent, batch_id) range, which it took to hold a row or two: its
-- estimate multiplies the agent's share of the table by the batch's, as
-- if a batch could belong to any agent, so with many batches it is tiny.
-- It then scanned the range and filtered it, reading the whole batch for
-- each of a message's tsvector and its neighbours' updates: an append to
-- a batch of 1,100 messages among 7,000 read 6,998 rows. A range on the
-- index's last column is part of any scan of that index (an IN list it
-- may leave to a filter). Found one by one by their whole key, each
-- lookup could instead take the (agent, id) index where the statistics
-- make an agent look like a row or two (a store of one-message agents,
-- or one never analyzed) and read the agent's every message, four times.
-- Migration 0041's texts and tsvectors are unchanged.
CREATE OR REPLACE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT) RETURNS tsvector
LANGUAGE plpgsql SET enable_seqscan = off AS $$
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
        FROM messages WHERE agent = m_agent AND batch_id = m_batch
            AND seq BETWEEN COALESCE(s_b2, s_b, m_seq) AND COALESCE(s_a2, s_a, m_seq)
            AND seq IN (s_b2, s_b, s_a, s_a2);
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

-- The neighbours a change of a message re-indexes, in the same range.
-- engram_seq_step is NULL past the ends of BIGINT, where the range stops
-- at the nearest place that exists (COALESCE).
CREATE OR REPLACE FUNCTION engram_message_fts_neighbours() RETURNS trigger
LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at)
        WHERE agent = OLD.agent AND batch_id = OLD.batch_id
            AND seq BETWEEN COALESCE(engram_seq_step(OLD.seq, -2), engram_seq_step(OLD.seq, -1), OLD.seq)
                AND COALESCE(engram_seq_step(OLD.seq, 2), engram_seq_step(OLD.seq, 1), OLD.seq)
            AND seq IN (engram_seq_step(OLD.seq, -2), engram_seq_step(OLD.seq, -1), engram_seq_step(OLD.seq, 1), engram_seq_step(OLD.seq, 2));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at)
        WHERE agent = NEW.agent AND batch_id = NEW.batch_id
            AND seq BETWEEN COALESCE(engram_seq_step(NEW.seq, -2), engram_seq_step(NEW.seq, -1), NEW.seq)
                AND COALESCE(engram_seq_step(NEW.seq, 2), engram_seq_step(NEW.seq, 1), NEW.seq)
            AND seq IN (engram_seq_step(NEW.seq, -2), engram_seq_step(NEW.seq, -1), engram_seq_step(NEW.seq, 1), engram_seq_step(NEW.seq, 2));
    END IF;
    RETURN NULL;
END $$;
