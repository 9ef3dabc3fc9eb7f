-- Consolidation's index of archival entries (memory/consolidate.go), so
-- that a round reads the entries it examines and the candidates they could
-- match, not every entry of the agent.
--
-- archival_minhash: one row per entry a round has examined, with the
-- entry whose cluster it joined (leader_id; the entry itself when it
-- joined none). A live entry without a row has not been examined: the
-- next round examines it first. settled is false while the entry's
-- cluster is not proposed (a dry run, the proposal cap, a stopped round):
-- a resumed round examines it again. archival_bands: the entry's MinHash band
-- keys (a 64-bit digest of its conversation, the band's number and the
-- band's values), one row per band. Both are derived data, rebuilt by
-- rounds; they go with their entry.
--
-- archival_live_agent_id: an agent's live entries in id order, so that a
-- round finds its window (and the first entry no round examined) by a
-- range, not by a scan of the agent's entries.
CREATE INDEX archival_live_agent_id ON archival (agent, id) WHERE valid_to IS NULL;
CREATE TABLE archival_minhash (
    archival_id INTEGER PRIMARY KEY REFERENCES archival (id) ON DELETE CASCADE,
    agent       TEXT    NOT NULL,
    leader_id   INTEGER NOT NULL,
    settled     INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX archival_minhash_agent ON archival_minhash (agent, archival_id);
CREATE INDEX archival_minhash_leader ON archival_minhash (leader_id, archival_id);

CREATE TABLE archival_bands (
    agent       TEXT    NOT NULL,
    band_key    INTEGER NOT NULL,
    archival_id INTEGER NOT NULL REFERENCES archival (id) ON DELETE CASCADE,
    PRIMARY KEY (agent, band_key, archival_id)
) WITHOUT ROWID;
CREATE INDEX archival_bands_entry ON archival_bands (archival_id);
