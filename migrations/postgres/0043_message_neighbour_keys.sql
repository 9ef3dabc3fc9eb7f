-- A message's neighbours are found by their whole key (agent, batch_id,
-- seq), one lookup each, so that the unique index is probed for each of
-- them, however long the batch.
--
-- Found by (agent, batch_id) and seq IN (the four places), the planner
-- weighed four probes of the unique index against one scan of the
-- (agent, batch_id) range, which it took to hold a row or two: its
-- estimate multiplies the agent's share of the table by the batch's, as
-- if a batch could belong to any agent, so with many batches it is tiny.
-- It then scanned the range and filtered it, reading the whole batch for
-- each of a message's tsvector and its four neighbours' updates: an
-- append to a batch of 1,100 messages among 7,000 read 6,998 rows.
-- Migration 0041's texts and tsvectors are unchanged.
CREATE OR REPLACE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT) RETURNS tsvector
LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    b2_text TEXT;
    b_text TEXT;
    a_text TEXT;
    a2_text TEXT;
    own tsvector;
    bef tsvector;
    aft tsvector;
BEGIN
    -- A place past the ends of BIGINT is NULL (engram_seq_step): no row.
    SELECT (SELECT content FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -2)),
            (SELECT content FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -1)),
            (SELECT content FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 1)),
            (SELECT content FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 2))
        INTO b2_text, b_text, a_text, a2_text;
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

-- The neighbours a change of a message re-indexes, by id: each id found
-- by its whole key (a missing neighbour's is NULL, which = ANY skips).
CREATE OR REPLACE FUNCTION engram_message_fts_neighbours() RETURNS trigger
LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at)
        WHERE id = ANY (ARRAY[
            (SELECT id FROM messages WHERE agent = OLD.agent AND batch_id = OLD.batch_id AND seq = engram_seq_step(OLD.seq, -2)),
            (SELECT id FROM messages WHERE agent = OLD.agent AND batch_id = OLD.batch_id AND seq = engram_seq_step(OLD.seq, -1)),
            (SELECT id FROM messages WHERE agent = OLD.agent AND batch_id = OLD.batch_id AND seq = engram_seq_step(OLD.seq, 1)),
            (SELECT id FROM messages WHERE agent = OLD.agent AND batch_id = OLD.batch_id AND seq = engram_seq_step(OLD.seq, 2))]);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at)
        WHERE id = ANY (ARRAY[
            (SELECT id FROM messages WHERE agent = NEW.agent AND batch_id = NEW.batch_id AND seq = engram_seq_step(NEW.seq, -2)),
            (SELECT id FROM messages WHERE agent = NEW.agent AND batch_id = NEW.batch_id AND seq = engram_seq_step(NEW.seq, -1)),
            (SELECT id FROM messages WHERE agent = NEW.agent AND batch_id = NEW.batch_id AND seq = engram_seq_step(NEW.seq, 1)),
            (SELECT id FROM messages WHERE agent = NEW.agent AND batch_id = NEW.batch_id AND seq = engram_seq_step(NEW.seq, 2))]);
    END IF;
    RETURN NULL;
END $$;
