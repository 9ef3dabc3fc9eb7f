-- Messages are indexed in their conversation, as on SQLite (migration
-- 0015): a message's tsvector holds its own words (weight A) and those of
-- the messages before (B) and after (C) it in the same batch (same agent
-- and batch_id, seq - 1 and seq + 1). The column was generated from the
-- message alone; now triggers keep it, and rewrite a neighbour's when a
-- message arrives, changes or goes. Rewriting a neighbour's tsvector is an
-- UPDATE, which search_text_messages_au logs for the text cache.
ALTER TABLE messages DROP COLUMN fts;
ALTER TABLE messages ADD COLUMN fts tsvector;

-- Volatile, so that in a row trigger it sees the rows the same statement
-- inserted before (a batch of messages is one INSERT).
--
-- Seq is any BIGINT: seq - 1 and seq + 1 are taken only where they exist
-- (engram_seq_step), since overflowing BIGINT arithmetic is an error and
-- a message at the end of the range would fail every write beside it.
--
-- A tsvector holds at most 1 MB of lexemes and positions: a message that
-- fits alone must still be storable beside large neighbours, so context
-- that would overflow it is left out (the message after first, then the
-- one before). The sum
-- of the parts' sizes bounds the concatenation's (headers included, it
-- exceeds the lexemes and positions plus any alignment the concatenation
-- adds).
CREATE FUNCTION engram_seq_step(m_seq BIGINT, step INT) RETURNS BIGINT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN step < 0 AND m_seq > -9223372036854775808 THEN m_seq - 1
                WHEN step > 0 AND m_seq < 9223372036854775807 THEN m_seq + 1 END
$$;

CREATE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT)
RETURNS tsvector LANGUAGE sql VOLATILE AS $$
    SELECT CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END
    FROM (SELECT setweight(to_tsvector('english', m_content), 'A') AS own,
        setweight(to_tsvector('english', COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -1)), '')), 'B') AS bef,
        setweight(to_tsvector('english', COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 1)), '')), 'C') AS aft) parts
$$;

-- A message's own tsvector is set before it is written (no second write).
CREATE FUNCTION engram_message_fts_own() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fts := engram_message_fts(NEW.agent, NEW.batch_id, NEW.seq, NEW.content);
    RETURN NEW;
END $$;
CREATE TRIGGER messages_fts_own BEFORE INSERT OR UPDATE OF agent, batch_id, seq, content ON messages
    FOR EACH ROW EXECUTE FUNCTION engram_message_fts_own();

-- Its neighbours' (old and new) are rewritten after.
CREATE FUNCTION engram_message_fts_neighbours() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content)
        WHERE agent = OLD.agent AND batch_id = OLD.batch_id AND seq IN (engram_seq_step(OLD.seq, -1), engram_seq_step(OLD.seq, 1));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content)
        WHERE agent = NEW.agent AND batch_id = NEW.batch_id AND seq IN (engram_seq_step(NEW.seq, -1), engram_seq_step(NEW.seq, 1));
    END IF;
    RETURN NULL;
END $$;
-- Only the columns the context depends on: the rewrite sets fts alone,
-- which fires neither trigger again.
CREATE TRIGGER messages_fts_neighbours AFTER INSERT OR DELETE OR UPDATE OF agent, batch_id, seq, content ON messages
    FOR EACH ROW EXECUTE FUNCTION engram_message_fts_neighbours();

UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content);
CREATE INDEX messages_fts ON messages USING GIN (fts);
