-- A partial text cache (package search, textpartial.go) ranks the agents
-- it holds with FTS5's store-wide statistics (row count, token total,
-- rows per term), which it moves along as the log replays. A logged row
-- it does not hold (another agent's) left it no way to tell what the
-- change did to those statistics, so it dropped them and the next search
-- counted its terms in FTS5 again; a supersession (valid_to and
-- superseded_by set, the text untouched) did that on every write.
--
-- changed says whether the entry may have changed what the full-text
-- index holds for the row (its text or its neighbours'); 0 only when it
-- cannot have: the statistics then stand whoever owns the row (2 below
-- for messages). The
-- DEFAULT is 1, so every writer that names only (kind, id) (the
-- neighbour re-index triggers of 0015/0019, blocks, later migrations)
-- stays correct without knowing of it.
ALTER TABLE search_text_log ADD COLUMN changed INTEGER NOT NULL DEFAULT 1;

-- Archival: fts_archival holds content, tags_text and metadata_json's
-- values (0005, 0019). agent and created_at are compared too although
-- the row's text does not hold them: they place an entry among its
-- neighbours should its indexed text ever take theirs in (as messages'
-- does), and engram never changes them. A changed id is also a delete
-- of the old id, which the cache must see to drop it.
DROP TRIGGER search_text_archival_au;
CREATE TRIGGER search_text_archival_au AFTER UPDATE ON archival BEGIN
    INSERT INTO search_text_log (kind, id, changed) VALUES (2, new.id,
        old.id IS NOT new.id OR old.agent IS NOT new.agent OR old.content IS NOT new.content
        OR old.tags_text IS NOT new.tags_text OR old.metadata_json IS NOT new.metadata_json
        OR old.created_at IS NOT new.created_at);
    INSERT INTO search_text_log (kind, id) SELECT 2, old.id WHERE old.id IS NOT new.id;
END;

-- Messages: fts_messages holds content and the content of the messages
-- before and after it in its batch (same agent, batch_id, seq +- 1;
-- 0015, 0019), whose changes fts_messages_* log separately (changed 1).
-- Role, name, tool calls and times are not indexed. The row's own insert
-- and a change to its own indexed columns are 2: an entry of 1 on a
-- message that is still there then came from a neighbour (fts_messages_*
-- are where such entries are written), which lets the cache follow
-- another agent's append (the predecessor's context column filled from
-- empty).
DROP TRIGGER search_text_messages_ai;
CREATE TRIGGER search_text_messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO search_text_log (kind, id, changed) VALUES (4, new.id, 2);
END;
DROP TRIGGER search_text_messages_au;
CREATE TRIGGER search_text_messages_au AFTER UPDATE ON messages BEGIN
    INSERT INTO search_text_log (kind, id, changed) VALUES (4, new.id,
        CASE WHEN old.id IS NOT new.id OR old.agent IS NOT new.agent OR old.batch_id IS NOT new.batch_id
            OR old.seq IS NOT new.seq OR old.content IS NOT new.content THEN 2 ELSE 0 END);
    INSERT INTO search_text_log (kind, id) SELECT 4, old.id WHERE old.id IS NOT new.id;
END;
