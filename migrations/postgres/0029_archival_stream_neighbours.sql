-- An archival entry naming no conversation is indexed with the entries
-- written before and after it in its owner's stream of such entries (the
-- words at weight D in its tsvector, as a conversation's entries are, 0018
-- and 0028), when they were written close to it in time, as on SQLite (its
-- migration archival_stream_neighbours).
--
-- The stream: the same owner's entries naming no conversation, in the
-- order a conversation's are ((COALESCE(conversation_pos, id), id)), live
-- entries around a live entry and any around a superseded one, as 0028.
-- The entry next to it on a side is its neighbour on that side when their
-- created_at (Unix nanoseconds) differ by at least 1 second (1000000000)
-- and at most 30 minutes (1800000000000); otherwise it has none there (the
-- entry beyond is not looked at). Notes written as a conversation goes are
-- seconds to minutes apart; a gap of more than 30 minutes is a new
-- conversation. Entries written less than a second apart were written by
-- a program in one go (a batch written with one timestamp, a document
-- load), not noted one after another, and are indexed alone.
--
-- archival_links gives them (the text cache reads it); engram_archival_fts
-- and the triggers find the same ones. archival_stream holds the stream's
-- order for all entries, archival_live_stream for live ones.

CREATE FUNCTION engram_archival_stream_near(a BIGINT, b BIGINT) RETURNS BOOLEAN LANGUAGE sql IMMUTABLE AS $$
    SELECT abs(a::numeric - b::numeric) BETWEEN 1000000000 AND 1800000000000
$$;

CREATE INDEX archival_stream ON archival (agent, COALESCE(conversation_pos, id), id)
    WHERE engram_archival_conversation(metadata_json) IS NULL;
CREATE INDEX archival_live_stream ON archival (agent, COALESCE(conversation_pos, id), id)
    WHERE engram_archival_conversation(metadata_json) IS NULL AND valid_to IS NULL;

-- The entries next to a place (owner, place, id) in the stream, live ones
-- (the live entries whose neighbour an entry there is) and superseded ones
-- among all (the superseded entries whose neighbour it is), other than
-- the entry a_id itself, near it in time or not.
CREATE FUNCTION engram_archival_stream_neighbours(a_agent TEXT, a_pos BIGINT, a_id BIGINT)
RETURNS SETOF BIGINT LANGUAGE sql STABLE AS $$
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
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1))
$$;

CREATE OR REPLACE VIEW archival_links AS
SELECT a.id, a.agent,
    CASE WHEN engram_archival_conversation(a.metadata_json) IS NOT NULL THEN
        CASE WHEN a.valid_to IS NULL THEN (SELECT p.id FROM archival p
            WHERE p.agent = a.agent AND engram_archival_conversation(p.metadata_json) = engram_archival_conversation(a.metadata_json) AND p.valid_to IS NULL AND p.id <> a.id
                AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
        ELSE (SELECT p.id FROM archival p
            WHERE p.agent = a.agent AND engram_archival_conversation(p.metadata_json) = engram_archival_conversation(a.metadata_json) AND p.id <> a.id
                AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END
    WHEN a.valid_to IS NULL THEN (SELECT CASE WHEN engram_archival_stream_near(p.created_at, a.created_at) THEN p.id END FROM archival p
            WHERE p.agent = a.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> a.id
                AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1)
    ELSE (SELECT CASE WHEN engram_archival_stream_near(p.created_at, a.created_at) THEN p.id END FROM archival p
            WHERE p.agent = a.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> a.id
                AND COALESCE(p.conversation_pos, p.id) <= COALESCE(a.conversation_pos, a.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(a.conversation_pos, a.id) OR p.id < a.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1) END AS before_id,
    CASE WHEN engram_archival_conversation(a.metadata_json) IS NOT NULL THEN
        CASE WHEN a.valid_to IS NULL THEN (SELECT n.id FROM archival n
            WHERE n.agent = a.agent AND engram_archival_conversation(n.metadata_json) = engram_archival_conversation(a.metadata_json) AND n.valid_to IS NULL AND n.id <> a.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
        ELSE (SELECT n.id FROM archival n
            WHERE n.agent = a.agent AND engram_archival_conversation(n.metadata_json) = engram_archival_conversation(a.metadata_json) AND n.id <> a.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END
    WHEN a.valid_to IS NULL THEN (SELECT CASE WHEN engram_archival_stream_near(n.created_at, a.created_at) THEN n.id END FROM archival n
            WHERE n.agent = a.agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.valid_to IS NULL AND n.id <> a.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)
    ELSE (SELECT CASE WHEN engram_archival_stream_near(n.created_at, a.created_at) THEN n.id END FROM archival n
            WHERE n.agent = a.agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.id <> a.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(a.conversation_pos, a.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(a.conversation_pos, a.id) OR n.id > a.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1) END AS after_id
FROM archival a;

-- An entry's tsvector: its own words (with its metadata's ISO dates as
-- words, as 0027) and its neighbours' (live ones for a live entry; in
-- the stream, near it in time) at weight D (the 1 MB cap as in 0018).
-- PL/pgSQL, so that a session plans its lookups once; volatile, so that
-- in a row trigger it sees the rows the same statement wrote before.
CREATE FUNCTION engram_archival_fts(a_id BIGINT, a_agent TEXT, a_content TEXT, a_tags TEXT, a_meta TEXT, a_pos BIGINT, a_live BOOLEAN, a_created BIGINT)
RETURNS tsvector LANGUAGE plpgsql VOLATILE AS $$
DECLARE
    conv TEXT := engram_archival_conversation(a_meta);
    pos BIGINT := COALESCE(a_pos, a_id);
    own tsvector := setweight(to_tsvector('english', a_content), 'B') ||
        setweight(to_tsvector('english', a_tags), 'A') ||
        setweight(jsonb_to_tsvector('english', a_meta::jsonb, '["string", "numeric"]'), 'C') ||
        setweight(to_tsvector('english', engram_metadata_dates(a_meta)), 'C');
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
    bef := setweight(to_tsvector('english', COALESCE(v_before, '')), 'D');
    aft := setweight(to_tsvector('english', COALESCE(v_after, '')), 'D');
    RETURN CASE
        WHEN pg_column_size(own) + pg_column_size(bef) + pg_column_size(aft) <= 1048575 THEN own || bef || aft
        WHEN pg_column_size(own) + pg_column_size(bef) <= 1048575 THEN own || bef
        WHEN pg_column_size(own) + pg_column_size(aft) <= 1048575 THEN own || aft
        ELSE own END;
END $$;

CREATE OR REPLACE FUNCTION engram_archival_fts_own() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.fts := engram_archival_fts(NEW.id, NEW.agent, NEW.content, NEW.tags_text, NEW.metadata_json, NEW.conversation_pos, NEW.valid_to IS NULL, NEW.created_at);
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION engram_archival_fts_neighbours() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    conv TEXT;
    moved BOOLEAN := TG_OP <> 'UPDATE' OR OLD.id <> NEW.id OR OLD.agent <> NEW.agent OR OLD.content IS DISTINCT FROM NEW.content
        OR OLD.metadata_json IS DISTINCT FROM NEW.metadata_json OR OLD.conversation_pos IS DISTINCT FROM NEW.conversation_pos;
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        conv := engram_archival_conversation(OLD.metadata_json);
        IF conv IS NOT NULL AND OLD.valid_to IS NULL THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
            WHERE id IN (SELECT engram_archival_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id);
        END IF;
        IF conv IS NOT NULL AND moved THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
            WHERE id IN (SELECT engram_archival_dead_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_dead_neighbours(OLD.agent, conv, COALESCE(OLD.conversation_pos, OLD.id), OLD.id);
        END IF;
    END IF;
    -- The entry itself is logged here too: its context may change where
    -- its indexed columns do not. An id changed by hand:
    -- search_text_archival_au logs the new id only, and a text cache would
    -- keep the old one.
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO search_text_log (kind, id) VALUES (2, NEW.id);
        IF OLD.id <> NEW.id THEN
            INSERT INTO search_text_log (kind, id) VALUES (2, OLD.id);
        END IF;
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        conv := engram_archival_conversation(NEW.metadata_json);
        IF conv IS NOT NULL AND NEW.valid_to IS NULL THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
            WHERE id IN (SELECT engram_archival_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id);
        END IF;
        IF conv IS NOT NULL AND moved THEN
            UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
            WHERE id IN (SELECT engram_archival_dead_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id));
            INSERT INTO search_text_log (kind, id)
                SELECT 2, engram_archival_dead_neighbours(NEW.agent, conv, COALESCE(NEW.conversation_pos, NEW.id), NEW.id);
        END IF;
    END IF;
    RETURN NULL;
END $$;

-- The stream's entries next to where an entry was and where it is are
-- rewritten and logged for the text cache, near it in time or not (one
-- that is not may have had another neighbour before). An insert appended
-- to the stream (nothing after it) rewrites nothing unless an entry
-- before it is near it in time: loading a batch does not rewrite every
-- entry twice.
CREATE FUNCTION engram_archival_fts_stream() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' AND NOT EXISTS (SELECT 1 FROM archival n
            WHERE n.agent = NEW.agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.id <> NEW.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(NEW.conversation_pos, NEW.id)
                AND (COALESCE(n.conversation_pos, n.id) > COALESCE(NEW.conversation_pos, NEW.id) OR n.id > NEW.id))
        AND NOT EXISTS (SELECT 1 FROM archival x WHERE x.id IN (SELECT engram_archival_stream_neighbours(NEW.agent, COALESCE(NEW.conversation_pos, NEW.id), NEW.id))
            AND engram_archival_stream_near(x.created_at, NEW.created_at)) THEN
        RETURN NULL;
    END IF;
    -- Superseded or restored, nothing else: its own context and its live
    -- neighbours' change only when one of them is near it or they are
    -- near each other (a batch's entries are near none).
    IF TG_OP = 'UPDATE' AND OLD.id = NEW.id AND OLD.agent = NEW.agent AND OLD.content IS NOT DISTINCT FROM NEW.content
        AND OLD.metadata_json IS NOT DISTINCT FROM NEW.metadata_json AND OLD.created_at = NEW.created_at
        AND OLD.conversation_pos IS NOT DISTINCT FROM NEW.conversation_pos
        AND NOT EXISTS (SELECT 1 FROM archival x WHERE x.id IN (SELECT engram_archival_stream_neighbours(NEW.agent, COALESCE(NEW.conversation_pos, NEW.id), NEW.id))
            AND engram_archival_stream_near(x.created_at, NEW.created_at))
        AND NOT COALESCE(engram_archival_stream_near((SELECT p.created_at FROM archival p
            WHERE p.agent = NEW.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> NEW.id
                AND COALESCE(p.conversation_pos, p.id) <= COALESCE(NEW.conversation_pos, NEW.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(NEW.conversation_pos, NEW.id) OR p.id < NEW.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1),
            (SELECT n.created_at FROM archival n
            WHERE n.agent = NEW.agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.valid_to IS NULL AND n.id <> NEW.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(NEW.conversation_pos, NEW.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(NEW.conversation_pos, NEW.id) OR n.id > NEW.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1)), false) THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') AND engram_archival_conversation(OLD.metadata_json) IS NULL THEN
        UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
        WHERE id IN (SELECT engram_archival_stream_neighbours(OLD.agent, COALESCE(OLD.conversation_pos, OLD.id), OLD.id));
        INSERT INTO search_text_log (kind, id)
            SELECT 2, engram_archival_stream_neighbours(OLD.agent, COALESCE(OLD.conversation_pos, OLD.id), OLD.id);
    END IF;
    IF TG_OP = 'UPDATE' THEN
        INSERT INTO search_text_log (kind, id) VALUES (2, NEW.id);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') AND engram_archival_conversation(NEW.metadata_json) IS NULL THEN
        UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
        WHERE id IN (SELECT engram_archival_stream_neighbours(NEW.agent, COALESCE(NEW.conversation_pos, NEW.id), NEW.id));
        INSERT INTO search_text_log (kind, id)
            SELECT 2, engram_archival_stream_neighbours(NEW.agent, COALESCE(NEW.conversation_pos, NEW.id), NEW.id);
    END IF;
    RETURN NULL;
END $$;

-- A hand edit of created_at changes the entry's neighbours too; so does
-- superseding, restoring or moving it (0028's triggers keep entries
-- naming a conversation).
CREATE TRIGGER archival_fts_own_stream BEFORE UPDATE OF created_at, valid_to, conversation_pos ON archival
    FOR EACH ROW WHEN (engram_archival_conversation(NEW.metadata_json) IS NULL
        AND (OLD.created_at <> NEW.created_at OR (OLD.valid_to IS NULL) <> (NEW.valid_to IS NULL) OR OLD.conversation_pos IS DISTINCT FROM NEW.conversation_pos))
    EXECUTE FUNCTION engram_archival_fts_own();
CREATE TRIGGER archival_fts_stream_ai AFTER INSERT ON archival
    FOR EACH ROW WHEN (engram_archival_conversation(NEW.metadata_json) IS NULL) EXECUTE FUNCTION engram_archival_fts_stream();
CREATE TRIGGER archival_fts_stream_ad AFTER DELETE ON archival
    FOR EACH ROW WHEN (engram_archival_conversation(OLD.metadata_json) IS NULL) EXECUTE FUNCTION engram_archival_fts_stream();
CREATE TRIGGER archival_fts_stream_au AFTER UPDATE OF id, agent, content, metadata_json, created_at, valid_to, conversation_pos ON archival
    FOR EACH ROW WHEN (engram_archival_conversation(OLD.metadata_json) IS NULL OR engram_archival_conversation(NEW.metadata_json) IS NULL)
    EXECUTE FUNCTION engram_archival_fts_stream();

DROP FUNCTION engram_archival_fts(BIGINT, TEXT, TEXT, TEXT, TEXT, BIGINT, BOOLEAN);

-- Re-index the entries naming no conversation with their neighbours.
UPDATE archival SET fts = engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)
WHERE engram_archival_conversation(metadata_json) IS NULL;
