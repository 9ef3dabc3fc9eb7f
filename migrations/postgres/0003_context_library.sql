-- The context library (as SQLite's 0007_context_library): an agent's
-- artifacts from earlier turns, deduplicated by artifact id, id = first-seen
-- order, content last write wins.
CREATE TABLE context_library (
    id          BIGSERIAL PRIMARY KEY,
    agent       TEXT    NOT NULL,
    artifact    TEXT    NOT NULL,
    kind        TEXT    NOT NULL DEFAULT '',
    title       TEXT    NOT NULL DEFAULT '',
    content     TEXT    NOT NULL,
    hash        TEXT    NOT NULL,
    recoverable INTEGER NOT NULL DEFAULT 0,
    updated_at  BIGINT  NOT NULL
);
CREATE UNIQUE INDEX context_library_key ON context_library (agent, artifact);
