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
    data  BLOB    NOT NULL,
    PRIMARY KEY (kind, owner)
);

CREATE TRIGGER search_text_parts_archival_ad AFTER DELETE ON archival BEGIN
    DELETE FROM search_text_parts WHERE kind = 2 AND owner = old.agent;
END;
CREATE TRIGGER search_text_parts_archival_au AFTER UPDATE OF agent, content, metadata_json, tags_json ON archival BEGIN
    DELETE FROM search_text_parts WHERE kind = 2 AND owner IN (old.agent, new.agent);
END;
CREATE TRIGGER search_text_parts_messages_ad AFTER DELETE ON messages BEGIN
    DELETE FROM search_text_parts WHERE kind = 4 AND owner = old.agent;
END;
CREATE TRIGGER search_text_parts_messages_au AFTER UPDATE OF agent, content, role, name, tool_call_id ON messages BEGIN
    DELETE FROM search_text_parts WHERE kind = 4 AND owner IN (old.agent, new.agent);
END;
