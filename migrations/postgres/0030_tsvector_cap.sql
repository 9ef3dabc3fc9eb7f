-- A tsvector holds at most 1 MB (1048575 bytes) of lexemes and positions:
-- to_tsvector of a text whose words take more fails ("string is too long
-- for tsvector"), and so did the write of an archival entry, a message or
-- a block within the store's caps (1 MiB of distinct words), and of any
-- entry or message next to one (whose tsvector holds its neighbours'
-- words). engram_tsvector(t, budget) is to_tsvector('english', t) when that
-- fits in budget bytes (pg_column_size, which counts more than the cap
-- does), else the tsvector of t's longest beginning that does, found by
-- shortening it a quarter at a time: such a text is found by its first
-- words, on this engine only. A text of at most a quarter of the budget in
-- bytes always fits (a word of k bytes and its separator take at most
-- 4 + k + 1 + 2 + 2 bytes) and takes the plain path; every text that was
-- indexed before is indexed as it was, so nothing is re-indexed.
CREATE FUNCTION engram_tsvector(t TEXT, budget INT) RETURNS tsvector LANGUAGE plpgsql IMMUTABLE PARALLEL SAFE AS $$
DECLARE
    n INT;
    v tsvector;
BEGIN
    IF octet_length(t) <= budget / 4 THEN
        RETURN to_tsvector('english', t);
    END IF;
    n := length(t);
    LOOP
        BEGIN
            v := to_tsvector('english', left(t, n));
            IF pg_column_size(v) <= budget THEN
                RETURN v;
            END IF;
        EXCEPTION WHEN program_limit_exceeded THEN
            NULL;
        END;
        n := n * 3 / 4;
    END LOOP;
END $$;

-- An archival entry's own words take what its tags and metadata leave.
CREATE OR REPLACE FUNCTION engram_archival_fts(a_id BIGINT, a_agent TEXT, a_content TEXT, a_tags TEXT, a_meta TEXT, a_pos BIGINT, a_live BOOLEAN, a_created BIGINT)
RETURNS tsvector LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    conv TEXT := engram_archival_conversation(a_meta);
    pos BIGINT := COALESCE(a_pos, a_id);
    rest tsvector := setweight(to_tsvector('english', a_tags), 'A') ||
        setweight(jsonb_to_tsvector('english', a_meta::jsonb, '["string", "numeric"]'), 'C') ||
        setweight(to_tsvector('english', engram_metadata_dates(a_meta)), 'C');
    own tsvector := setweight(engram_tsvector(a_content, 1048575 - pg_column_size(rest)), 'B') || rest;
    v_before TEXT;
    v_after TEXT;
    bef tsvector;
    aft tsvector;
BEGIN
    IF conv IS NULL AND a_live THEN
        SELECT CASE WHEN engram_archival_stream_near(p.created_at, a_created) THEN p.content END INTO v_before FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        SELECT CASE WHEN engram_archival_stream_near(n.created_at, a_created) THEN n.content END INTO v_after FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.valid_to IS NULL AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= pos AND (COALESCE(n.conversation_pos, n.id) > pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1;
    ELSIF conv IS NULL THEN
        SELECT CASE WHEN engram_archival_stream_near(p.created_at, a_created) THEN p.content END INTO v_before FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        SELECT CASE WHEN engram_archival_stream_near(n.created_at, a_created) THEN n.content END INTO v_after FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= pos AND (COALESCE(n.conversation_pos, n.id) > pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1;
    ELSIF a_live THEN
        SELECT p.content INTO v_before FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = conv AND p.valid_to IS NULL AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        SELECT n.content INTO v_after FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = conv AND n.valid_to IS NULL AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= pos AND (COALESCE(n.conversation_pos, n.id) > pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1;
    ELSE
        SELECT p.content INTO v_before FROM archival p
            WHERE p.agent = a_agent AND engram_archival_conversation(p.metadata_json) = conv AND p.id <> a_id
                AND COALESCE(p.conversation_pos, p.id) <= pos AND (COALESCE(p.conversation_pos, p.id) < pos OR p.id < a_id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        SELECT n.content INTO v_after FROM archival n
            WHERE n.agent = a_agent AND engram_archival_conversation(n.metadata_json) = conv AND n.id <> a_id
                AND COALESCE(n.conversation_pos, n.id) >= pos AND (COALESCE(n.conversation_pos, n.id) > pos OR n.id > a_id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1;
    END IF;
    bef := setweight(engram_tsvector(COALESCE(v_before, ''), 1048575), 'D');
    aft := setweight(engram_tsvector(COALESCE(v_after, ''), 1048575), 'D');
    RETURN CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END;
END $$;

-- A message's own words take the cap less room for its date's words.
CREATE OR REPLACE FUNCTION engram_message_fts(m_agent TEXT, m_batch TEXT, m_seq BIGINT, m_content TEXT, m_created BIGINT)
RETURNS tsvector LANGUAGE sql VOLATILE AS $$
    SELECT CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END
    FROM (SELECT setweight(engram_tsvector(m_content, 1048575 - 1024), 'A') ||
            setweight(to_tsvector('english', engram_message_date(m_created)), 'D') AS own,
        setweight(engram_tsvector(COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, -1)), ''), 1048575), 'B') AS bef,
        setweight(engram_tsvector(COALESCE((SELECT content FROM messages
            WHERE agent = m_agent AND batch_id = m_batch AND seq = engram_seq_step(m_seq, 1)), ''), 1048575), 'C') AS aft) parts
$$;
