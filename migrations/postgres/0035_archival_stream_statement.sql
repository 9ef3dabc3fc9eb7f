-- Superseding or restoring entries of the stream (entries naming no
-- conversation, 0029) in one statement rewrites the live entries around
-- them. A row trigger on PostgreSQL runs after the whole statement, so
-- the trigger of one restored entry sees its neighbour restored too: of
-- entries 1 (live), 2 and 3 (superseded) and 4 (live), with 1 and 4
-- near each other in time and 2 and 3 far from both, restoring 2 and 3 in
-- one statement left 1 and 4 indexed with each other, because each
-- restored entry's live neighbours (1 and 3, then 2 and 4) were not near
-- each other and the shortcut of 0029 rewrote nothing. The shortcut is
-- now taken only when neither live neighbour was written in this
-- transaction: otherwise the entries around the entry are rewritten, as
-- for any other change. A row this transaction wrote has an xmin of the
-- transaction's id or, written in a savepoint, of a subtransaction's,
-- which comes after it: age(xmin), counted from the transaction's id, is
-- 0 or less. (So is a row written by a transaction that began after this
-- one and committed: the shortcut is then not taken either, which costs a
-- rewrite and is never wrong.)

CREATE OR REPLACE FUNCTION engram_archival_fts_stream() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    prev_id BIGINT;
    prev_at BIGINT;
    prev_xmin xid;
    next_id BIGINT;
    next_at BIGINT;
    next_xmin xid;
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
    -- near each other (a batch's entries are near none), or when one of
    -- them was written in this transaction (see the header).
    IF TG_OP = 'UPDATE' AND OLD.id = NEW.id AND OLD.agent = NEW.agent AND OLD.content IS NOT DISTINCT FROM NEW.content
        AND OLD.metadata_json IS NOT DISTINCT FROM NEW.metadata_json AND OLD.created_at = NEW.created_at
        AND OLD.conversation_pos IS NOT DISTINCT FROM NEW.conversation_pos
        AND NOT EXISTS (SELECT 1 FROM archival x WHERE x.id IN (SELECT engram_archival_stream_neighbours(NEW.agent, COALESCE(NEW.conversation_pos, NEW.id), NEW.id))
            AND engram_archival_stream_near(x.created_at, NEW.created_at)) THEN
        -- The live entries before and after it, each looked up once.
        SELECT p.id, p.created_at, p.xmin INTO prev_id, prev_at, prev_xmin FROM archival p
            WHERE p.agent = NEW.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> NEW.id
                AND COALESCE(p.conversation_pos, p.id) <= COALESCE(NEW.conversation_pos, NEW.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(NEW.conversation_pos, NEW.id) OR p.id < NEW.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        SELECT n.id, n.created_at, n.xmin INTO next_id, next_at, next_xmin FROM archival n
            WHERE n.agent = NEW.agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.valid_to IS NULL AND n.id <> NEW.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(NEW.conversation_pos, NEW.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(NEW.conversation_pos, NEW.id) OR n.id > NEW.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1;
        IF NOT COALESCE(engram_archival_stream_near(prev_at, next_at), false)
            AND NOT COALESCE(prev_id IS NOT NULL AND age(prev_xmin) <= 0, false)
            AND NOT COALESCE(next_id IS NOT NULL AND age(next_xmin) <= 0, false) THEN
            RETURN NULL;
        END IF;
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

