-- A message's tsvector holds the two messages before it (weight B) and the
-- two after it (C) in its batch, not one, as on SQLite (migration 0033):
-- the part before is the text of the message at seq - 2 and a space, then
-- the one at seq - 1; the part after the one at seq + 1, then a space and
-- the one at seq + 2, each where it exists. A question's words are often
-- two turns from the turn that answers it, and held out by conversation
-- two turns on each side find more evidence than one (docs/retrieval.md).
--
-- engram_seq_step takes any step: seq + step where it fits BIGINT, NULL
-- where it would overflow (for steps of 1 as before).
CREATE OR REPLACE FUNCTION engram_seq_step(m_seq BIGINT, step INT) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN step < 0 AND m_seq >= -9223372036854775808 - step THEN m_seq + step
                WHEN step > 0 AND m_seq <= 9223372036854775807 - step THEN m_seq + step END
$$;

CREATE OR REPLACE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT) RETURNS tsvector LANGUAGE plpgsql AS $$
DECLARE
    b2_text TEXT;
    b_text TEXT;
    a_text TEXT;
    a2_text TEXT;
    own tsvector;
    bef tsvector;
    aft tsvector;
BEGIN
    SELECT content INTO b2_text FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -2);
    SELECT content INTO b_text FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -1);
    SELECT content INTO a_text FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 1);
    SELECT content INTO a2_text FROM messages WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 2);
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

-- A message arriving, changing or going rewrites the tsvectors of the
-- messages up to two seqs from it (old place and new).
CREATE OR REPLACE FUNCTION engram_message_fts_neighbours() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at)
        WHERE agent = OLD.agent AND batch_id = OLD.batch_id AND seq IN (engram_seq_step(OLD.seq, -2),
            engram_seq_step(OLD.seq, -1), engram_seq_step(OLD.seq, 1), engram_seq_step(OLD.seq, 2));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at)
        WHERE agent = NEW.agent AND batch_id = NEW.batch_id AND seq IN (engram_seq_step(NEW.seq, -2),
            engram_seq_step(NEW.seq, -1), engram_seq_step(NEW.seq, 1), engram_seq_step(NEW.seq, 2));
    END IF;
    RETURN NULL;
END $$;

UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at);
