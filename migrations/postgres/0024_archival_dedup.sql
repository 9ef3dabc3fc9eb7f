-- Archival entries are stored once, as on SQLite (migration 0027): an
-- entry's content key (memory's dedupKey: a digest of its normalised
-- content and of the conversation its metadata names) is unique among an
-- agent's live entries; an insert of a live entry's key conflicts (INSERT
-- ... ON CONFLICT DO NOTHING) and the store merges it into that entry.
--
-- content_key is NULL until the store computes it (memory fills the keys
-- of the rows that have none when it opens, oldest first) and '' for an
-- entry outside the rule (Options.KeepDuplicates, or a newer live
-- duplicate found by that back-fill: the oldest keeps the key). Neither
-- takes part in the unique index, so existing duplicates never fail this
-- migration.
ALTER TABLE archival ADD COLUMN content_key TEXT;
CREATE UNIQUE INDEX archival_live_key ON archival (agent, content_key) WHERE valid_to IS NULL AND content_key <> '';
CREATE INDEX archival_key_pending ON archival (id) WHERE content_key IS NULL;

-- Proposals also hold consolidation's proposals on an agent's archival
-- memory (op 'merge_archival'): those name no block and their owner is
-- their proposer.
ALTER TABLE proposals ALTER COLUMN block_id DROP NOT NULL;
CREATE INDEX proposals_archival ON proposals (proposer, status) WHERE block_id IS NULL;
