-- Repairs a database made by one of the two versions of 0001_core.sql that
-- main shipped on 2026-11-23 before the file was changed in place (at
-- 6dff819 and 96fc4ce; the file as released since f23770c is the one
-- migrations/testdata/released.txt holds). Such a database is at version 1
-- like any other, but its blocks.fts is a generated column, it has no
-- fts_blocks_dirty or search_reembed, its vector tables are keyed "id"
-- rather than "rowid", and its block trigger never marks a block for the
-- lazy full-text index: every search failed ("relation fts_blocks_dirty
-- does not exist") and opening with an embedder on pgvector too. On every
-- other database each step below finds nothing to change (the functions
-- are replaced by the bodies they already have).
DO $$
DECLARE
    t TEXT;
BEGIN
    IF EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = 'blocks'::regclass
               AND attname = 'fts' AND attgenerated <> '' AND NOT attisdropped) THEN
        -- Keeps the column (a trigger of 0008 is on it) and its values.
        ALTER TABLE blocks ALTER COLUMN fts DROP EXPRESSION;
    END IF;
    FOREACH t IN ARRAY ARRAY['vec_blocks', 'vec_archival', 'vec_messages'] LOOP
        IF EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = t AND column_name = 'id')
           AND NOT EXISTS (SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()
                   AND table_name = t AND column_name = 'rowid') THEN
            EXECUTE format('ALTER TABLE %I RENAME COLUMN id TO rowid', t);
        END IF;
    END LOOP;
END $$;

CREATE TABLE IF NOT EXISTS fts_blocks_dirty (id BIGINT PRIMARY KEY);
-- Blocks the index never saw are indexed by the next search.
INSERT INTO fts_blocks_dirty (id) SELECT id FROM blocks WHERE fts IS NULL ON CONFLICT DO NOTHING;

CREATE TABLE IF NOT EXISTS search_reembed (
    kind      BIGINT NOT NULL,
    id        BIGINT NOT NULL,
    hash      BIGINT NOT NULL,
    embedding BYTEA  NOT NULL,
    PRIMARY KEY (kind, id)
);

CREATE OR REPLACE FUNCTION engram_block_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM fts_blocks_dirty WHERE id = OLD.id;
        DELETE FROM vec_blocks WHERE rowid = OLD.id;
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
        DELETE FROM vec_blocks WHERE rowid = OLD.id;
        INSERT INTO search_vec_log (kind, id) VALUES (1, OLD.id);
    END IF;
    -- Every committed change reaches every process's cache (LISTEN/NOTIFY):
    -- PostgreSQL delivers it after commit, once per block per transaction.
    PERFORM pg_notify('engram_blocks', NEW.id::text);
    RETURN NEW;
END $$;

CREATE OR REPLACE FUNCTION engram_row_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    EXECUTE format('DELETE FROM %I WHERE rowid = $1', TG_ARGV[0]) USING OLD.id;
    INSERT INTO search_vec_log (kind, id) VALUES (TG_ARGV[1]::bigint, OLD.id);
    RETURN OLD;
END $$;
