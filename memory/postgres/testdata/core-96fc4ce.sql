-- engram on PostgreSQL: the same tables and columns as the SQLite schema
-- (migrations/0001..0005), so the store's statements run unchanged on both.
-- Times are Unix nanoseconds (BIGINT). Full text is a tsvector column per
-- searchable table (GIN-indexed); vectors are float32 BYTEA rows served by
-- the in-process KNN cache, whose change log is search_vec_log.

CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);

CREATE TABLE blocks (
    id           BIGSERIAL PRIMARY KEY,
    owner        TEXT    NOT NULL,
    label        TEXT    NOT NULL,
    description  TEXT    NOT NULL DEFAULT '',
    block_type   TEXT    NOT NULL,
    permission   TEXT    NOT NULL,
    schema_json  TEXT    NOT NULL,
    char_limit   BIGINT  NOT NULL,
    pinned       BOOLEAN NOT NULL DEFAULT FALSE,
    priority     BIGINT  NOT NULL DEFAULT 0,
    meta_ver     BIGINT  NOT NULL DEFAULT 0,
    epoch        BIGINT  NOT NULL DEFAULT 0,
    snapshot     BYTEA,
    snapshot_crc BIGINT,
    snapshot_seq BIGINT  NOT NULL DEFAULT 0,
    last_seq     BIGINT  NOT NULL DEFAULT 0,
    rendered     TEXT    NOT NULL DEFAULT '',
    heads        TEXT    NOT NULL DEFAULT '',
    created_at   BIGINT  NOT NULL,
    updated_at   BIGINT  NOT NULL,
    -- Indexed lazily: writes only mark the block in fts_blocks_dirty (a
    -- generated column re-tokenised the whole text on every append), and
    -- searches over blocks index the marked ones first.
    fts          tsvector,
    UNIQUE (owner, label)
);
CREATE INDEX blocks_owner_type ON blocks (owner, block_type, id);
CREATE INDEX blocks_fts ON blocks USING GIN (fts);

CREATE TABLE fts_blocks_dirty (id BIGINT PRIMARY KEY);

CREATE TABLE block_updates (
    block_id   BIGINT NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    seq        BIGINT NOT NULL,
    epoch      BIGINT NOT NULL,
    actor      TEXT   NOT NULL,
    data       BYTEA  NOT NULL,
    crc        BIGINT,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (block_id, seq)
);

CREATE TABLE block_archive (
    block_id    BIGINT NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    epoch       BIGINT NOT NULL,
    snapshot    BYTEA  NOT NULL,
    archived_at BIGINT NOT NULL,
    PRIMARY KEY (block_id, epoch)
);

CREATE TABLE shares (
    block_id   BIGINT NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    agent      TEXT   NOT NULL,
    permission TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    PRIMARY KEY (block_id, agent)
);
CREATE INDEX shares_agent ON shares (agent, block_id);

CREATE TABLE proposals (
    id         BIGSERIAL PRIMARY KEY,
    block_id   BIGINT NOT NULL REFERENCES blocks (id) ON DELETE CASCADE,
    proposer   TEXT   NOT NULL,
    op         TEXT   NOT NULL,
    args_json  TEXT   NOT NULL,
    reason     TEXT   NOT NULL DEFAULT '',
    status     TEXT   NOT NULL DEFAULT 'pending',
    created_at BIGINT NOT NULL,
    decided_at BIGINT,
    decided_by TEXT
);
CREATE INDEX proposals_block ON proposals (block_id, status);

CREATE TABLE archival (
    id            BIGSERIAL PRIMARY KEY,
    agent         TEXT   NOT NULL,
    content       TEXT   NOT NULL,
    metadata_json TEXT   NOT NULL DEFAULT '{}',
    tags_json     TEXT   NOT NULL DEFAULT '[]',
    tags_text     TEXT   NOT NULL DEFAULT '',
    created_at    BIGINT NOT NULL,
    valid_from    BIGINT NOT NULL,
    valid_to      BIGINT,
    superseded_by BIGINT REFERENCES archival (id) ON DELETE SET NULL,
    -- Metadata is searched by value, not key (as on SQLite, migration 0005).
    fts           tsvector GENERATED ALWAYS AS (
        setweight(to_tsvector('english', content), 'B') ||
        setweight(to_tsvector('english', tags_text), 'A') ||
        setweight(jsonb_to_tsvector('english', metadata_json::jsonb, '["string", "numeric"]'), 'C')) STORED
);
CREATE INDEX archival_agent ON archival (agent, created_at);
CREATE INDEX archival_fts ON archival USING GIN (fts);

CREATE TABLE archival_tags (
    archival_id BIGINT NOT NULL REFERENCES archival (id) ON DELETE CASCADE,
    tag         TEXT   NOT NULL,
    PRIMARY KEY (archival_id, tag)
);
CREATE INDEX archival_tags_tag ON archival_tags (tag, archival_id);

CREATE TABLE messages (
    id              BIGSERIAL PRIMARY KEY,
    agent           TEXT   NOT NULL,
    role            TEXT   NOT NULL,
    content         TEXT   NOT NULL DEFAULT '',
    name            TEXT   NOT NULL DEFAULT '',
    tool_calls_json TEXT   NOT NULL DEFAULT '[]',
    tool_call_id    TEXT   NOT NULL DEFAULT '',
    batch_id        TEXT   NOT NULL,
    seq             BIGINT NOT NULL,
    created_at      BIGINT NOT NULL,
    fts             tsvector GENERATED ALWAYS AS (to_tsvector('english', content)) STORED,
    UNIQUE (agent, batch_id, seq)
);
CREATE INDEX messages_agent ON messages (agent, id);
CREATE INDEX messages_fts ON messages USING GIN (fts);

CREATE TABLE batches (
    agent        TEXT   NOT NULL,
    batch_id     TEXT   NOT NULL,
    complete     BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL,
    completed_at BIGINT,
    PRIMARY KEY (agent, batch_id)
);

CREATE TABLE summaries (
    id               BIGSERIAL PRIMARY KEY,
    agent            TEXT   NOT NULL,
    first_message_id BIGINT NOT NULL,
    last_message_id  BIGINT NOT NULL,
    previous_id      BIGINT REFERENCES summaries (id) ON DELETE SET NULL,
    content          TEXT   NOT NULL,
    model            TEXT   NOT NULL DEFAULT '',
    created_at       BIGINT NOT NULL
);
CREATE INDEX summaries_agent ON summaries (agent, last_message_id);

-- Vectors: one table per content type, float32 little-endian BYTEA (the
-- same bytes as SQLite's vec0), KNN in process over the owner's partition.
CREATE TABLE search_vec_log (
    seq  BIGSERIAL PRIMARY KEY,
    kind BIGINT NOT NULL, -- ContentType; 0 = everything changed (Reembed)
    id   BIGINT NOT NULL
);
CREATE TABLE vec_blocks   (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, embedding BYTEA NOT NULL);
CREATE TABLE vec_archival (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, embedding BYTEA NOT NULL);
CREATE TABLE vec_messages (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, embedding BYTEA NOT NULL);

-- Blocks whose vector is out of date (written by triggers, embedded in the
-- background, as on SQLite).
CREATE TABLE vec_blocks_dirty (id BIGINT PRIMARY KEY);

CREATE FUNCTION engram_block_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM fts_blocks_dirty WHERE id = OLD.id;
        DELETE FROM vec_blocks WHERE id = OLD.id;
        DELETE FROM vec_blocks_dirty WHERE id = OLD.id;
        INSERT INTO search_vec_log (kind, id) VALUES (1, OLD.id);
        PERFORM pg_notify('engram_blocks', OLD.id::text);
        RETURN OLD;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.label IS DISTINCT FROM OLD.label
        OR NEW.description IS DISTINCT FROM OLD.description
        OR NEW.rendered IS DISTINCT FROM OLD.rendered THEN
        INSERT INTO fts_blocks_dirty (id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
        INSERT INTO vec_blocks_dirty (id) VALUES (NEW.id) ON CONFLICT DO NOTHING;
    ELSIF NEW.fts IS DISTINCT FROM OLD.fts AND NEW.last_seq = OLD.last_seq
        AND NEW.meta_ver = OLD.meta_ver AND NEW.epoch = OLD.epoch THEN
        RETURN NEW; -- only the lazy index changed: nothing for caches
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.owner IS DISTINCT FROM OLD.owner THEN
        DELETE FROM vec_blocks WHERE id = OLD.id;
        INSERT INTO search_vec_log (kind, id) VALUES (1, OLD.id);
    END IF;
    -- Every committed change reaches every process's cache (LISTEN/NOTIFY):
    -- PostgreSQL delivers it after commit, once per block per transaction.
    PERFORM pg_notify('engram_blocks', NEW.id::text);
    RETURN NEW;
END $$;
CREATE TRIGGER blocks_changed AFTER INSERT OR UPDATE OR DELETE ON blocks
    FOR EACH ROW EXECUTE FUNCTION engram_block_changed();

CREATE FUNCTION engram_row_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DELETE FROM %I WHERE id = $1', TG_ARGV[0]) USING OLD.id;
    INSERT INTO search_vec_log (kind, id) VALUES (TG_ARGV[1]::bigint, OLD.id);
    RETURN OLD;
END $$;
CREATE TRIGGER archival_vec_ad AFTER DELETE ON archival
    FOR EACH ROW EXECUTE FUNCTION engram_row_deleted('vec_archival', '2');
CREATE TRIGGER messages_vec_ad AFTER DELETE ON messages
    FOR EACH ROW EXECUTE FUNCTION engram_row_deleted('vec_messages', '4');
