-- Writers no longer take one lock for the whole database: writes to
-- different blocks and different agents run in parallel (memory/postgres
-- locks what each transaction touches, see its locks.go), so the change
-- logs' sequence numbers are no longer handed out in commit order. Each
-- entry records its writing transaction, and a reader catches up with the
-- entries its last snapshot did not hold (search.ChangeLog): an entry of a
-- transaction that commits late is read late, never skipped.
--
-- The existing entries take this migration's transaction.
ALTER TABLE search_text_log ADD COLUMN txid BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX search_text_log_txid ON search_text_log (txid);
ALTER TABLE search_vec_log ADD COLUMN txid BIGINT NOT NULL DEFAULT (pg_current_xact_id()::text::bigint);
CREATE INDEX search_vec_log_txid ON search_vec_log (txid);

-- Each log's floor: entries of transactions below next_txid may have been
-- trimmed. A reader whose snapshot may not hold such an entry reloads.
CREATE TABLE search_log_floor (
    log       TEXT   PRIMARY KEY,
    next_txid BIGINT NOT NULL
);
INSERT INTO search_log_floor (log, next_txid) VALUES ('search_text_log', 0), ('search_vec_log', 0);

-- Trimming drops the entries numbered up to upto whose transactions every
-- snapshot from now on holds (below the oldest one running), and moves
-- the floor past them. One trimmer at a time: a writer that finds another
-- trimming (the advisory lock, key, taken) leaves the log to it rather
-- than wait for its rows.
CREATE FUNCTION engram_log_trim(log_table TEXT, key BIGINT, upto BIGINT) RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    gone BIGINT;
BEGIN
    IF NOT pg_try_advisory_xact_lock(key) THEN
        RETURN;
    END IF;
    EXECUTE format('WITH d AS (DELETE FROM %I WHERE seq <= $1
            AND txid < pg_snapshot_xmin(pg_current_snapshot())::text::bigint RETURNING txid)
        SELECT max(txid) FROM d', log_table) INTO gone USING upto;
    IF gone IS NOT NULL THEN
        UPDATE search_log_floor SET next_txid = GREATEST(next_txid, gone + 1) WHERE log = log_table;
    END IF;
END $$;

-- The text log keeps its last 100,000 entries, trimmed once per 1,024
-- (the trigger of migration 0008, which calls this function).
CREATE OR REPLACE FUNCTION engram_text_log_trim() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM engram_log_trim('search_text_log', 216172782113783810, NEW.seq - 100000);
    RETURN NULL;
END $$;

-- A transaction that NOTIFYs takes a lock of the whole cluster at its
-- commit and holds it through the commit's WAL flush, so notifying writers
-- commit one at a time. engram's block writers set engram.notify to
-- 'after' (for their transaction) and notify the blocks they changed
-- after their commit instead, in a transaction of their own that flushes
-- nothing; every other writer (an UPDATE by hand) still notifies from
-- here.
CREATE OR REPLACE FUNCTION engram_block_changed() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    notify_now BOOLEAN := current_setting('engram.notify', true) IS DISTINCT FROM 'after';
BEGIN
    IF TG_OP = 'DELETE' THEN
        DELETE FROM fts_blocks_dirty WHERE id = OLD.id;
        DELETE FROM vec_blocks WHERE rowid = OLD.id;
        DELETE FROM vec_blocks_dirty WHERE id = OLD.id;
        INSERT INTO search_vec_log (kind, id) VALUES (1, OLD.id);
        IF notify_now THEN
            PERFORM pg_notify('engram_blocks', OLD.id::text);
        END IF;
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
    IF notify_now THEN
        PERFORM pg_notify('engram_blocks', NEW.id::text);
    END IF;
    RETURN NEW;
END $$;
