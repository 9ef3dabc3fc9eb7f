-- The in-process text cache holds archival and message rows whole (their
-- content, tags and metadata, so a search page needs no SQL), which relies
-- on every change to those rows being logged. Archival updates all are;
-- messages were logged only for agent, content and created_at. Messages
-- are not updated by engram, but a row changed by hand must not leave the
-- cache showing its old role, name, batch or tool call: log any update.
DROP TRIGGER search_text_messages_au;
CREATE TRIGGER search_text_messages_au AFTER UPDATE ON messages BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (4, new.id);
END;
