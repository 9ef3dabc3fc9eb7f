-- engram search: FTS5 indexes over blocks, archival entries and messages.
--
-- Each index is an external-content FTS5 table: the text lives once, in the
-- base table, and the FTS table holds only the inverted index (content=...,
-- content_rowid='id', so an FTS rowid is the base row's id). Triggers keep the
-- index in step with the base table inside the same transaction, so writers
-- need no indexing code and a rolled-back write leaves no trace in the index.
--
-- Tokenizer: Porter stemming over unicode61 with diacritics folded. Queries
-- must be built with search.MatchExpression (an OR of quoted terms), never
-- passed raw to MATCH.
--
-- Vector indexes (sqlite-vec vec0) need the embedder's dimension, so package
-- search creates them at run time; they are not part of this migration.

CREATE VIRTUAL TABLE fts_blocks USING fts5(
    label,
    description,
    rendered,
    content = 'blocks',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER fts_blocks_ai AFTER INSERT ON blocks BEGIN
    INSERT INTO fts_blocks (rowid, label, description, rendered)
    VALUES (new.id, new.label, new.description, new.rendered);
END;

CREATE TRIGGER fts_blocks_ad AFTER DELETE ON blocks BEGIN
    INSERT INTO fts_blocks (fts_blocks, rowid, label, description, rendered)
    VALUES ('delete', old.id, old.label, old.description, old.rendered);
END;

-- Only the indexed columns: heads/last_seq/updated_at change on every commit
-- and must not churn the index.
CREATE TRIGGER fts_blocks_au AFTER UPDATE OF label, description, rendered ON blocks BEGIN
    INSERT INTO fts_blocks (fts_blocks, rowid, label, description, rendered)
    VALUES ('delete', old.id, old.label, old.description, old.rendered);
    INSERT INTO fts_blocks (rowid, label, description, rendered)
    VALUES (new.id, new.label, new.description, new.rendered);
END;

CREATE VIRTUAL TABLE fts_archival USING fts5(
    content,
    tags_text,
    metadata_json,
    content = 'archival',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER fts_archival_ai AFTER INSERT ON archival BEGIN
    INSERT INTO fts_archival (rowid, content, tags_text, metadata_json)
    VALUES (new.id, new.content, new.tags_text, new.metadata_json);
END;

CREATE TRIGGER fts_archival_ad AFTER DELETE ON archival BEGIN
    INSERT INTO fts_archival (fts_archival, rowid, content, tags_text, metadata_json)
    VALUES ('delete', old.id, old.content, old.tags_text, old.metadata_json);
END;

-- valid_to / superseded_by updates (supersession) do not touch the index.
CREATE TRIGGER fts_archival_au AFTER UPDATE OF content, tags_text, metadata_json ON archival BEGIN
    INSERT INTO fts_archival (fts_archival, rowid, content, tags_text, metadata_json)
    VALUES ('delete', old.id, old.content, old.tags_text, old.metadata_json);
    INSERT INTO fts_archival (rowid, content, tags_text, metadata_json)
    VALUES (new.id, new.content, new.tags_text, new.metadata_json);
END;

CREATE VIRTUAL TABLE fts_messages USING fts5(
    content,
    content = 'messages',
    content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);

CREATE TRIGGER fts_messages_ai AFTER INSERT ON messages BEGIN
    INSERT INTO fts_messages (rowid, content) VALUES (new.id, new.content);
END;

CREATE TRIGGER fts_messages_ad AFTER DELETE ON messages BEGIN
    INSERT INTO fts_messages (fts_messages, rowid, content) VALUES ('delete', old.id, old.content);
END;

CREATE TRIGGER fts_messages_au AFTER UPDATE OF content ON messages BEGIN
    INSERT INTO fts_messages (fts_messages, rowid, content) VALUES ('delete', old.id, old.content);
    INSERT INTO fts_messages (rowid, content) VALUES (new.id, new.content);
END;

-- Index whatever rows already exist (none on a fresh file; cheap either way).
INSERT INTO fts_blocks (fts_blocks) VALUES ('rebuild');
INSERT INTO fts_archival (fts_archival) VALUES ('rebuild');
INSERT INTO fts_messages (fts_messages) VALUES ('rebuild');
