-- An UPDATE of messages logs its rows' new ids for the text caches by one
-- statement trigger over the updated rows (as for archival entries), and
-- the old id of a row whose id changed (by hand) by a row trigger that
-- runs only then. Migration 0034 logged both from one statement trigger
-- that kept the old rows as well as the new ones and took the union of
-- their ids: every message insert re-indexes the two messages before it
-- by an UPDATE, which copied both versions of each row, tsvectors and
-- all, to log the same two ids. The log is the same set of ids.
CREATE OR REPLACE FUNCTION engram_text_log_old_id() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    INSERT INTO search_text_log (kind, id) VALUES (TG_ARGV[0]::bigint, OLD.id);
    RETURN NULL;
END $$;

DROP TRIGGER IF EXISTS search_text_messages_au ON messages;
CREATE TRIGGER search_text_messages_au AFTER UPDATE ON messages
    REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_log_new('4');
DROP TRIGGER IF EXISTS search_text_messages_au_id ON messages;
CREATE TRIGGER search_text_messages_au_id AFTER UPDATE OF id ON messages
    FOR EACH ROW WHEN (OLD.id IS DISTINCT FROM NEW.id) EXECUTE FUNCTION engram_text_log_old_id('4');
DROP FUNCTION IF EXISTS engram_text_log_moved();
