-- Archival metadata was indexed for full-text search as raw JSON, keys
-- included, so a question containing "date" or "session" matched every
-- entry whose metadata had such a key. The index now holds the metadata's
-- scalar values only (json_tree atoms), not its keys or punctuation.
--
-- fts_archival becomes contentless with deletes (FTS5 contentless_delete):
-- what it indexes for metadata is derived, not a column of archival, and
-- engram never reads text back out of the index (snippets are built in Go
-- from archival rows).

DROP TRIGGER fts_archival_ai;
DROP TRIGGER fts_archival_ad;
DROP TRIGGER fts_archival_au;
DROP TABLE fts_archival;

CREATE VIRTUAL TABLE fts_archival USING fts5(
    content,
    tags_text,
    metadata_values,
    content = '',
    contentless_delete = 1,
    tokenize = 'porter unicode61 remove_diacritics 2'
);

INSERT INTO fts_archival (rowid, content, tags_text, metadata_values)
SELECT id, content, tags_text,
       (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(archival.metadata_json) WHERE atom IS NOT NULL)
FROM archival;

CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival BEGIN
    INSERT INTO fts_archival (rowid, content, tags_text, metadata_values)
    VALUES (new.id, new.content, new.tags_text,
            (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(new.metadata_json) WHERE atom IS NOT NULL));
END;

CREATE TRIGGER fts_archival_ad AFTER DELETE ON archival BEGIN
    DELETE FROM fts_archival WHERE rowid = old.id;
END;

-- valid_to / superseded_by updates (supersession) do not touch the index.
CREATE TRIGGER fts_archival_au AFTER UPDATE OF content, tags_text, metadata_json ON archival BEGIN
    DELETE FROM fts_archival WHERE rowid = old.id;
    INSERT INTO fts_archival (rowid, content, tags_text, metadata_values)
    VALUES (new.id, new.content, new.tags_text,
            (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(new.metadata_json) WHERE atom IS NOT NULL));
END;
