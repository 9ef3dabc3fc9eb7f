-- The functions the archival and message triggers call for each row are
-- PL/pgSQL, not SQL. PostgreSQL plans a SQL function's body again at every
-- call it does not inline (one with a FROM, or one returning a set): an
-- archival insert called engram_archival_conversation seven times (its
-- indexes, their predicates, the triggers' conditions), about 140 µs of
-- planning each, and each neighbour lookup planned its UNION again. A
-- PL/pgSQL function keeps its statements' plans for the session, and
-- engram_archival_conversation now runs as plain expressions. The bodies
-- are the same statements, so every value is the one the SQL functions
-- gave: the indexes over engram_archival_conversation(metadata_json) stay
-- valid, and nothing is re-indexed.
CREATE OR REPLACE FUNCTION engram_archival_conversation(meta TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $$
DECLARE
    j jsonb := meta::jsonb;
    c TEXT := COALESCE(
        CASE WHEN jsonb_typeof(j -> 'conversation') IN ('string', 'number') AND j -> 'conversation' <> '""'::jsonb THEN (j -> 'conversation')::text END,
        CASE WHEN jsonb_typeof(j -> 'conversation_id') IN ('string', 'number') AND j -> 'conversation_id' <> '""'::jsonb THEN (j -> 'conversation_id')::text END,
        CASE WHEN jsonb_typeof(j -> 'session') IN ('string', 'number') AND j -> 'session' <> '""'::jsonb THEN (j -> 'session')::text END,
        CASE WHEN jsonb_typeof(j -> 'session_id') IN ('string', 'number') AND j -> 'session_id' <> '""'::jsonb THEN (j -> 'session_id')::text END,
        CASE WHEN jsonb_typeof(j -> 'thread') IN ('string', 'number') AND j -> 'thread' <> '""'::jsonb THEN (j -> 'thread')::text END,
        CASE WHEN jsonb_typeof(j -> 'thread_id') IN ('string', 'number') AND j -> 'thread_id' <> '""'::jsonb THEN (j -> 'thread_id')::text END,
        NULL);
BEGIN
    RETURN CASE WHEN octet_length(c) > 1024 THEN 'sha256:' || encode(sha256(convert_to(c, 'UTF8')), 'hex') ELSE c END;
END $$;

CREATE OR REPLACE FUNCTION engram_metadata_dates(a_meta TEXT) RETURNS TEXT LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
    RETURN (SELECT COALESCE(string_agg(engram_iso_date_words(v #>> '{}'), ' '), '')
        FROM jsonb_path_query(a_meta::jsonb, 'strict $.**{0 to 1000}') AS v
        WHERE jsonb_typeof(v) = 'string');
END $$;

CREATE OR REPLACE FUNCTION engram_archival_neighbours(a_agent TEXT, a_conv TEXT, a_pos BIGINT, a_id BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    (SELECT p.id FROM archival p
        WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = a_conv AND p.valid_to IS NULL AND p.id <> a_id
            AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
    UNION ALL
    (SELECT n.id FROM archival n
        WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = a_conv AND n.valid_to IS NULL AND n.id <> a_id
            AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
        ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1);
END $$;

CREATE OR REPLACE FUNCTION engram_archival_dead_neighbours(a_agent TEXT, a_conv TEXT, a_pos BIGINT, a_id BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    SELECT x.id FROM archival x WHERE x.valid_to IS NOT NULL AND x.id IN (
        (SELECT p.id FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = a_conv AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        UNION ALL
        (SELECT n.id FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = a_conv AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1));
END $$;

CREATE OR REPLACE FUNCTION engram_archival_stream_neighbours(a_agent TEXT, a_pos BIGINT, a_id BIGINT) RETURNS SETOF BIGINT LANGUAGE plpgsql STABLE AS $$
BEGIN
    RETURN QUERY
    (SELECT p.id FROM archival p
        WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> a_id
            AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
        ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
    UNION ALL
    (SELECT n.id FROM archival n
        WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.valid_to IS NULL AND n.id <> a_id
            AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
        ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
    UNION ALL
    SELECT x.id FROM archival x WHERE x.valid_to IS NOT NULL AND x.id IN (
        (SELECT p.id FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= a_pos AND (COALESCE(p.conversation_pos, p.id) < a_pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        UNION ALL
        (SELECT n.id FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= a_pos AND (COALESCE(n.conversation_pos, n.id) > a_pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1));
END $$;

CREATE OR REPLACE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT) RETURNS tsvector LANGUAGE plpgsql AS $$
BEGIN
    RETURN (SELECT CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END
    FROM (SELECT setweight(engram_tsvector(m_content, 1048575 - 1024), 'A') ||
            setweight(to_tsvector('english', engram_message_date(m_created)), 'D') AS own,
        setweight(engram_tsvector(COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -1)), ''), 1048575), 'B') AS bef,
        setweight(engram_tsvector(COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 1)), ''), 1048575), 'C') AS aft) parts);
END $$;
