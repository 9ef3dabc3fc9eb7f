-- The context library (builder "L2"): artifacts (files, snippets, pages)
-- an agent was given in earlier turns, deduplicated by artifact id. The
-- row id is the first-seen order and never changes; a later turn with the
-- same artifact id overwrites the content (last write wins) in place.
CREATE TABLE context_library (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    agent       TEXT    NOT NULL,
    artifact    TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT '',
    title       TEXT    NOT NULL DEFAULT '',
    content     TEXT    NOT NULL,
    hash        TEXT    NOT NULL,
    recoverable INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX context_library_key ON context_library (agent, artifact);
