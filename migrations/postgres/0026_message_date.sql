-- A message's tsvector also holds its date, as SQLite's 0031: created_at
-- (Unix nanoseconds, UTC) as "8 May 2023" at weight D, so that a question
-- naming the day, month or year something was said finds it; a
-- created_at before 1970 has no date words. The date goes with the
-- message's own words (it is a few bytes), before the neighbours' are
-- left out past the 1 MB cap.
CREATE FUNCTION engram_message_date(m_created BIGINT) RETURNS TEXT LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN m_created >= 0
        THEN to_char(to_timestamp(m_created / 1000000000) AT TIME ZONE 'UTC', 'FMDD FMMonth YYYY') ELSE '' END
$$;

CREATE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT)
RETURNS tsvector LANGUAGE sql VOLATILE AS $$
    SELECT CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END
    FROM (SELECT setweight(to_tsvector('english', m_content), 'A') ||
            setweight(to_tsvector('english', engram_message_date(m_created)), 'D') AS own,
        setweight(to_tsvector('english', COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -1)), '')), 'B') AS bef,
        setweight(to_tsvector('english', COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 1)), '')), 'C') AS aft) parts
$$;

CREATE OR REPLACE FUNCTION engram_message_fts_own() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fts := engram_message_fts(NEW.agent, NEW.batch_id, NEW.seq, NEW.content, NEW.created_at);
    RETURN NEW;
END $$;
DROP TRIGGER messages_fts_own ON messages;
CREATE TRIGGER messages_fts_own BEFORE INSERT OR UPDATE OF agent, batch_id, seq, content, created_at ON messages
    FOR EACH ROW EXECUTE FUNCTION engram_message_fts_own();

CREATE OR REPLACE FUNCTION engram_message_fts_neighbours() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at)
        WHERE agent = OLD.agent AND batch_id = OLD.batch_id AND seq IN (engram_seq_step(OLD.seq, -1), engram_seq_step(OLD.seq, 1));
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at)
        WHERE agent = NEW.agent AND batch_id = NEW.batch_id AND seq IN (engram_seq_step(NEW.seq, -1), engram_seq_step(NEW.seq, 1));
    END IF;
    RETURN NULL;
END $$;

DROP FUNCTION engram_message_fts(TEXT, TEXT, BIGINT, TEXT);

UPDATE messages SET fts = engram_message_fts(agent, batch_id, seq, content, created_at);
