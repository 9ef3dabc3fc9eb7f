-- engram core schema: blocks (CRDT documents), their incremental updates,
-- shares, proposals, archival entries, messages, batches and summaries.
-- Times are Unix nanoseconds (INTEGER) so ranges compare cheaply.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE blocks (
    id          INTEGER PRIMARY KEY,
    owner       TEXT    NOT NULL,              -- agent id that owns the block
    label       TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    block_type  TEXT    NOT NULL,              -- core | working | archival | log
    permission  TEXT    NOT NULL,              -- owner's permission
    schema_json TEXT    NOT NULL,
    char_limit  INTEGER NOT NULL,
    pinned      INTEGER NOT NULL DEFAULT 0,
    priority    INTEGER NOT NULL DEFAULT 0,
    meta_ver    INTEGER NOT NULL DEFAULT 0,    -- bumped on every metadata change
    epoch       INTEGER NOT NULL DEFAULT 0,    -- bumped when history is rebased
    snapshot    BLOB,                          -- automerge Save() of this epoch
    snapshot_seq INTEGER NOT NULL DEFAULT 0,   -- updates with seq <= this are in snapshot
    last_seq    INTEGER NOT NULL DEFAULT 0,    -- highest seq in block_updates (cheap freshness check)
    rendered    TEXT    NOT NULL DEFAULT '',   -- Render() at heads
    heads       TEXT    NOT NULL DEFAULT '',   -- comma-separated change hashes
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    UNIQUE (owner, label)
);
CREATE INDEX blocks_owner_type ON blocks (owner, block_type, id);

-- Append-only incremental automerge changes, one row per persisted commit.
CREATE TABLE block_updates (
    block_id   INTEGER NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL,
    epoch      INTEGER NOT NULL,
    actor      TEXT    NOT NULL,
    data       BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (block_id, seq)
) WITHOUT ROWID;

-- Full histories retired by a rebase, kept for provenance.
CREATE TABLE block_archive (
    block_id    INTEGER NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    epoch       INTEGER NOT NULL,
    snapshot    BLOB    NOT NULL,
    archived_at INTEGER NOT NULL,
    PRIMARY KEY (block_id, epoch)
) WITHOUT ROWID;

CREATE TABLE shares (
    block_id   INTEGER NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    agent      TEXT    NOT NULL,
    permission TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (block_id, agent)
) WITHOUT ROWID;
CREATE INDEX shares_agent ON shares (agent, block_id);

-- Edits an agent proposed to a Partner/Human block that were not approved
-- at once; an approver later applies or rejects them.
CREATE TABLE proposals (
    id          INTEGER PRIMARY KEY,
    block_id    INTEGER NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    proposer    TEXT    NOT NULL,
    op          TEXT    NOT NULL,
    args_json   TEXT    NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    status      TEXT    NOT NULL DEFAULT 'pending', -- pending | approved | rejected
    created_at  INTEGER NOT NULL,
    decided_at  INTEGER,
    decided_by  TEXT
);
CREATE INDEX proposals_block ON proposals (block_id, status);

CREATE TABLE archival (
    id            INTEGER PRIMARY KEY,
    agent         TEXT    NOT NULL,
    content       TEXT    NOT NULL,
    metadata_json TEXT    NOT NULL DEFAULT '{}',
    tags_json     TEXT    NOT NULL DEFAULT '[]',
    tags_text     TEXT    NOT NULL DEFAULT '',  -- tags joined by spaces, for FTS
    created_at    INTEGER NOT NULL,
    valid_from    INTEGER NOT NULL,
    valid_to      INTEGER,                      -- NULL while current
    superseded_by INTEGER REFERENCES archival (id) ON DELETE SET NULL
);
CREATE INDEX archival_agent ON archival (agent, created_at);

CREATE TABLE archival_tags (
    archival_id INTEGER NOT NULL REFERENCES archival (id) ON DELETE CASCADE,
    tag         TEXT    NOT NULL,
    PRIMARY KEY (archival_id, tag)
) WITHOUT ROWID;
CREATE INDEX archival_tags_tag ON archival_tags (tag, archival_id);

CREATE TABLE messages (
    id              INTEGER PRIMARY KEY,
    agent           TEXT    NOT NULL,
    role            TEXT    NOT NULL,
    content         TEXT    NOT NULL DEFAULT '',
    name            TEXT    NOT NULL DEFAULT '',
    tool_calls_json TEXT    NOT NULL DEFAULT '[]',
    tool_call_id    TEXT    NOT NULL DEFAULT '',
    batch_id        TEXT    NOT NULL,
    seq             INTEGER NOT NULL,            -- position within the batch
    created_at      INTEGER NOT NULL,
    UNIQUE (agent, batch_id, seq)
);
CREATE INDEX messages_agent ON messages (agent, id);

CREATE TABLE batches (
    agent        TEXT    NOT NULL,
    batch_id     TEXT    NOT NULL,
    complete     INTEGER NOT NULL DEFAULT 0,
    created_at   INTEGER NOT NULL,
    completed_at INTEGER,
    PRIMARY KEY (agent, batch_id)
) WITHOUT ROWID;

-- A summary covers messages first_message_id..last_message_id of one agent
-- and folds in the summary before it (previous_id).
CREATE TABLE summaries (
    id               INTEGER PRIMARY KEY,
    agent            TEXT    NOT NULL,
    first_message_id INTEGER NOT NULL,
    last_message_id  INTEGER NOT NULL,
    previous_id      INTEGER REFERENCES summaries (id) ON DELETE SET NULL,
    content          TEXT    NOT NULL,
    model            TEXT    NOT NULL DEFAULT '',
    created_at       INTEGER NOT NULL
);
CREATE INDEX summaries_agent ON summaries (agent, last_message_id);
