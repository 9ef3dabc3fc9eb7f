-- search_text_parts keeps, per owner and kind (2 archival entries, 4
-- messages), the text cache's analysis of that owner's rows as of a
-- position of search_text_log: a process writes it after reading and
-- analyzing the rows, and another process's first search of that owner
-- decodes it and replays the log since, instead of reading and analyzing
-- every row again. It is a cache: any row may go, and a row a process
-- cannot use (another format, another analyzer, a log trimmed past it) is
-- read again from the tables.
--
-- A row whose words change or go takes its owner's part with it, so that
-- a deleted entry's text does not outlive it here.
CREATE TABLE search_text_parts (
    kind  INTEGER NOT NULL,
    owner TEXT    NOT NULL,
    data  BYTEA   NOT NULL,
    PRIMARY KEY (kind, owner)
);

CREATE FUNCTION engram_text_parts_gone() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    DELETE FROM search_text_parts p USING (SELECT DISTINCT agent FROM old_rows) o
        WHERE p.kind = TG_ARGV[0]::integer AND p.owner = o.agent;
    RETURN NULL;
END $$;
CREATE FUNCTION engram_text_parts_changed() RETURNS trigger LANGUAGE plpgsql SET enable_seqscan = off AS $$
BEGIN
    DELETE FROM search_text_parts WHERE kind = TG_ARGV[0]::integer AND owner IN (OLD.agent, NEW.agent);
    RETURN NULL;
END $$;

CREATE TRIGGER search_text_parts_archival_ad AFTER DELETE ON archival
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_parts_gone('2');
CREATE TRIGGER search_text_parts_archival_au AFTER UPDATE ON archival FOR EACH ROW
    WHEN (OLD.agent IS DISTINCT FROM NEW.agent OR OLD.content IS DISTINCT FROM NEW.content
        OR OLD.metadata_json IS DISTINCT FROM NEW.metadata_json OR OLD.tags_json IS DISTINCT FROM NEW.tags_json)
    EXECUTE FUNCTION engram_text_parts_changed('2');
CREATE TRIGGER search_text_parts_messages_ad AFTER DELETE ON messages
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION engram_text_parts_gone('4');
CREATE TRIGGER search_text_parts_messages_au AFTER UPDATE ON messages FOR EACH ROW
    WHEN (OLD.agent IS DISTINCT FROM NEW.agent OR OLD.content IS DISTINCT FROM NEW.content
        OR OLD.role IS DISTINCT FROM NEW.role OR OLD.name IS DISTINCT FROM NEW.name
        OR OLD.tool_call_id IS DISTINCT FROM NEW.tool_call_id)
    EXECUTE FUNCTION engram_text_parts_changed('4');
