-- A message's tsvector also holds its date, as SQLite's 0030: created_at
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

-- An archival entry's metadata is indexed with the words of any ISO 8601
-- date among its string values, as on SQLite (0030): a string beginning
-- YYYY-MM-DD (month 01 to 12) adds "8 May 2023" at the metadata's weight
-- (C). engram_iso_date_words gives those words ('' for any other string).
CREATE FUNCTION engram_iso_date_words(s TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN s ~ '^[0-9]{4}-(0[1-9]|1[0-2])-[0-3][0-9]'
        THEN substr(s, 9, 2)::int::text || ' ' ||
            (ARRAY['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August',
                'September', 'October', 'November', 'December'])[substr(s, 6, 2)::int] || ' ' || substr(s, 1, 4)
        ELSE '' END
$$;

CREATE FUNCTION engram_metadata_dates(a_meta TEXT) RETURNS TEXT LANGUAGE sql IMMUTABLE AS $$
    SELECT COALESCE(string_agg(engram_iso_date_words(v #>> '{}'), ' '), '')
    FROM jsonb_path_query(a_meta::jsonb, 'strict $.**{0 to 1000}') AS v
    WHERE jsonb_typeof(v) = 'string'
$$;

CREATE OR REPLACE FUNCTION engram_archival_fts(a_id BIGINT, a_agent TEXT, a_content TEXT, a_tags TEXT, a_meta TEXT)
RETURNS tsvector LANGUAGE sql VOLATILE AS $$
    SELECT CASE
        WHEN conv IS NULL THEN own
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END
    FROM (SELECT c.conv,
        setweight(to_tsvector('english', a_content), 'B') ||
            setweight(to_tsvector('english', a_tags), 'A') ||
            setweight(jsonb_to_tsvector('english', a_meta::jsonb, '["string", "numeric"]'), 'C') ||
            setweight(to_tsvector('english', engram_metadata_dates(a_meta)), 'C') AS own,
        setweight(to_tsvector('english', COALESCE((SELECT p.content FROM archival_conversations p
            WHERE p.agent = a_agent AND p.conversation = c.conv AND p.id < a_id ORDER BY p.id DESC LIMIT 1), '')), 'D') AS bef,
        setweight(to_tsvector('english', COALESCE((SELECT n.content FROM archival_conversations n
            WHERE n.agent = a_agent AND n.conversation = c.conv AND n.id > a_id ORDER BY n.id LIMIT 1), '')), 'D') AS aft
        FROM (SELECT engram_archival_conversation(a_meta) AS conv) c) parts
$$;

UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json)
WHERE engram_metadata_dates(metadata_json) <> '';
