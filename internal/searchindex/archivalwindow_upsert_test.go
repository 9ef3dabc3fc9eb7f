package searchindex_test

import (
	"path/filepath"
	"testing"
)

// An upsert (ON CONFLICT DO UPDATE) over an archival row on SQLite: the
// outer statement's conflict policy replaces the OR IGNORE and OR REPLACE
// of the statements its triggers run, so the triggers' inserts into
// fts_owners, archival_touched and fts_archival meet a row already there.
// Before 0035 an upsert of valid_to went through and left fts_archival
// holding a row twice; now each such upsert fails. Either way the index
// must stay what a rebuild gives: the statement fails or the index is
// exact.
func TestArchivalUpsertSQLite(t *testing.T) {
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	if _, err := db.Exec(`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from) VALUES
		(1, 'a', 'alpha', '{"session": "s1"}', '[]', '', 0, 0), (2, 'a', 'bravo', '{"session": "s1"}', '[]', '', 0, 0),
		(3, 'a', 'charlie', '{"session": "s1"}', '[]', '', 0, 0), (4, 'a', 'delta', '{"session": "s1"}', '[]', '', 0, 0)`); err != nil {
		t.Fatal(err)
	}
	const ins = `INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from) VALUES (2, 'a', 'echo', '{}', '[]', '', 0, 0) ON CONFLICT (id) DO UPDATE SET `
	for _, set := range []string{"content = excluded.content", "valid_to = 1", "valid_to = NULL", "conversation_pos = 9",
		"metadata_json = excluded.metadata_json", "created_at = 5000000000"} {
		_, err := db.Exec(ins + set)
		if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
			t.Errorf("after an upsert setting %s (error %v): extra %v missing %v", set, err, extra, missing)
		}
		t.Logf("upsert setting %s: %v", set, err)
	}
}
