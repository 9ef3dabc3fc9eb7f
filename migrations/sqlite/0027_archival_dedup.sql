-- Archival entries are stored once: an entry's content key (memory's
-- dedupKey: a digest of its content normalised — Unicode NFKC, case-folded,
-- whitespace collapsed — and of the conversation its metadata names, if
-- any) is unique among an agent's live entries (valid_to IS NULL). An
-- insert of a live entry's key conflicts (INSERT ... ON CONFLICT DO
-- NOTHING) and the store merges it into that entry instead.
--
-- content_key is NULL until the store computes it (the normalisation is
-- Go's, not SQL's: memory fills the keys of the rows that have none when
-- it opens, oldest first, in batches) and '' for an entry outside the rule:
-- written with Options.KeepDuplicates, or a live duplicate found by that
-- back-fill (the oldest live entry keeps the key; the newer ones stay
-- stored and live, without one, for consolidation to propose merging).
-- Neither NULL nor '' takes part in the unique index, so existing
-- duplicates never fail this migration.
ALTER TABLE archival ADD COLUMN content_key TEXT;
CREATE UNIQUE INDEX archival_live_key ON archival (agent, content_key) WHERE valid_to IS NULL AND content_key <> '';
CREATE INDEX archival_key_pending ON archival (id) WHERE content_key IS NULL;

-- Proposals also hold consolidation's proposals on an agent's archival
-- memory (op 'merge_archival'): those name no block (block_id NULL) and
-- their owner is their proposer. SQLite cannot drop a NOT NULL, so the
-- table is rebuilt (nothing references it).
CREATE TABLE proposals_next (
    id          INTEGER PRIMARY KEY,
    block_id    INTEGER REFERENCES blocks (id) ON DELETE CASCADE,
    proposer    TEXT    NOT NULL,
    op          TEXT    NOT NULL,
    args_json   TEXT    NOT NULL,
    reason      TEXT    NOT NULL DEFAULT '',
    status      TEXT    NOT NULL DEFAULT 'pending', -- pending | approved | rejected | withdrawn
    created_at  INTEGER NOT NULL,
    decided_at  INTEGER,
    decided_by  TEXT
);
INSERT INTO proposals_next (id, block_id, proposer, op, args_json, reason, status, created_at, decided_at, decided_by)
    SELECT id, block_id, proposer, op, args_json, reason, status, created_at, decided_at, decided_by FROM proposals;
DROP TABLE proposals;
ALTER TABLE proposals_next RENAME TO proposals;
CREATE INDEX proposals_block ON proposals (block_id, status);
CREATE INDEX proposals_archival ON proposals (proposer, status) WHERE block_id IS NULL;
