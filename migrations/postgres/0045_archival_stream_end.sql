-- An entry inserted at the end of its owner's stream (entries naming no
-- conversation) rewrites the entries around it only when one of them is
-- near it in time. The trigger decided with
-- engram_archival_stream_neighbours, which finds the entries around any
-- place (eleven lookups and three set-returning calls), a quarter of an
-- archival insert's time on the server. At the end of the stream one
-- lookup decides, two when the entry just before the new one is
-- superseded: no entry comes after the new one, so the only contexts
-- it changes are those of the entries whose entry after it becomes, the
-- live entry before it and, when superseded, the entry just before it
-- (the rule of migration 0029: live entries around a live one, any around
-- a superseded one), and each only when near it. When one is, the entries
-- around it are rewritten as before.
--
-- An entry superseded or restored and nothing else keeps its shortcut of
-- migration 0035 only when no entry between its live neighbours was
-- written in this transaction either, not only the neighbours
-- themselves: one UPDATE restoring entry 2 and superseding entry 3 of
-- entries 1 (live), 2 and 3 (live), with 1 and 3 near each other and 2
-- near neither, left 1 indexed with 3. Entry 2's trigger, seeing 3
-- superseded, found no live entry after it and took the shortcut; entry
-- 3's found 2 live before it and rewrote the entries from 2 on. Everything
-- else is as in migration 0035.
CREATE OR REPLACE FUNCTION engram_archival_fts_stream() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
DECLARE
    prev_id BIGINT;
    prev_at BIGINT;
    prev_xmin xid;
    next_id BIGINT;
    next_at BIGINT;
    next_xmin xid;
    last_at BIGINT;
    last_dead BOOLEAN;
    prev_pos BIGINT;
    next_pos BIGINT;
BEGIN
    IF TG_OP = 'INSERT' AND NOT EXISTS (SELECT 1 FROM archival n
            WHERE n.agent = NEW.agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.id <> NEW.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(NEW.conversation_pos, NEW.id)
                AND (COALESCE(n.conversation_pos, n.id) > COALESCE(NEW.conversation_pos, NEW.id) OR n.id > NEW.id)) THEN
        -- It ends its stream: the entries whose context it changes are
        -- the live one before it (L: its live entry after is now this
        -- one) and the one just before it (P) when P is superseded (its
        -- entry after is now this one), each when near it.
        SELECT p.created_at, p.valid_to IS NOT NULL INTO last_at, last_dead FROM archival p
            WHERE p.agent = NEW.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.id <> NEW.id
                AND COALESCE(p.conversation_pos, p.id) <= COALESCE(NEW.conversation_pos, NEW.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(NEW.conversation_pos, NEW.id) OR p.id < NEW.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        IF last_dead THEN
            SELECT p.created_at INTO prev_at FROM archival p
                WHERE p.agent = NEW.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> NEW.id
                    AND COALESCE(p.conversation_pos, p.id) <= COALESCE(NEW.conversation_pos, NEW.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(NEW.conversation_pos, NEW.id) OR p.id < NEW.id)
                ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        ELSE
            prev_at := last_at; -- P is live (L itself) or there is none
        END IF;
        IF NOT COALESCE(engram_archival_stream_near(prev_at, NEW.created_at), false)
            AND NOT COALESCE(last_dead AND engram_archival_stream_near(last_at, NEW.created_at), false) THEN
            RETURN NULL;
        END IF;
        prev_at := NULL;
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
        SELECT p.id, p.created_at, p.xmin, COALESCE(p.conversation_pos, p.id) INTO prev_id, prev_at, prev_xmin, prev_pos FROM archival p
            WHERE p.agent = NEW.agent AND engram_archival_conversation(p.metadata_json) IS NULL AND p.valid_to IS NULL AND p.id <> NEW.id
                AND COALESCE(p.conversation_pos, p.id) <= COALESCE(NEW.conversation_pos, NEW.id) AND (COALESCE(p.conversation_pos, p.id) < COALESCE(NEW.conversation_pos, NEW.id) OR p.id < NEW.id)
            ORDER BY COALESCE(p.conversation_pos, p.id) DESC, p.id DESC LIMIT 1;
        SELECT n.id, n.created_at, n.xmin, COALESCE(n.conversation_pos, n.id) INTO next_id, next_at, next_xmin, next_pos FROM archival n
            WHERE n.agent = NEW.agent AND engram_archival_conversation(n.metadata_json) IS NULL AND n.valid_to IS NULL AND n.id <> NEW.id
                AND COALESCE(n.conversation_pos, n.id) >= COALESCE(NEW.conversation_pos, NEW.id) AND (COALESCE(n.conversation_pos, n.id) > COALESCE(NEW.conversation_pos, NEW.id) OR n.id > NEW.id)
            ORDER BY COALESCE(n.conversation_pos, n.id), n.id LIMIT 1;
        IF NOT COALESCE(engram_archival_stream_near(prev_at, next_at), false)
            AND NOT COALESCE(prev_id IS NOT NULL AND age(prev_xmin) <= 0, false)
            AND NOT COALESCE(next_id IS NOT NULL AND age(next_xmin) <= 0, false)
            AND NOT EXISTS (SELECT 1 FROM archival x
                WHERE x.agent = NEW.agent AND engram_archival_conversation(x.metadata_json) IS NULL AND x.id <> NEW.id
                    AND (prev_id IS NULL OR (COALESCE(x.conversation_pos, x.id), x.id) > (prev_pos, prev_id))
                    AND (next_id IS NULL OR (COALESCE(x.conversation_pos, x.id), x.id) < (next_pos, next_id))
                    AND age(x.xmin) <= 0) THEN
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
