package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// streamEntry is an archival entry of the stream scenario: id, owner,
// metadata and created_at as an offset from baseTime.
type streamEntry struct {
	id    int64
	agent string
	meta  string
	at    time.Duration
}

// streamStep is a hand edit of the stream scenario and each entry's
// neighbours (before, after; 0: none) after it, as archival_links gives
// them.
type streamStep struct {
	sql   string
	links map[int64][2]int64
}

// The stream scenario: entries naming no conversation are neighbours in
// write order when written 1 second to 30 minutes apart (inclusive); a
// neighbour too close or too far is none, and the entry beyond it is not
// looked at.
var (
	streamEntries = []streamEntry{
		{1, "a", `{}`, 0},
		{2, "a", `{"topic": "x"}`, 10 * time.Second},
		{3, "a", `{"session": ""}`, 10*time.Second + 500*time.Millisecond}, // 0.5 s after 2: a burst
		{4, "a", `{"session": "s"}`, 11 * time.Second},                     // a conversation's, not the stream's
		{5, "a", `{}`, time.Minute},
		{6, "a", `{}`, time.Hour},                  // 59 minutes after 5
		{7, "a", `{}`, time.Hour + 30*time.Minute}, // 30 minutes after 6
		{8, "b", `{}`, time.Hour + 31*time.Minute}, // another owner
		{9, "a", `{}`, 2*time.Hour + time.Nanosecond},
	}
	streamSteps = []streamStep{
		{"", map[int64][2]int64{1: {0, 2}, 2: {1, 0}, 3: {0, 5}, 4: {0, 0}, 5: {3, 0}, 6: {0, 7}, 7: {6, 0}, 8: {0, 0}, 9: {0, 0}}},
		// Superseded: 3 and 6 (59 minutes apart) are no neighbours; 5 keeps
		// its place among all entries.
		{`UPDATE archival SET valid_to = created_at + 1 WHERE id = 5`,
			map[int64][2]int64{1: {0, 2}, 2: {1, 0}, 3: {0, 0}, 5: {3, 0}, 6: {0, 7}, 7: {6, 0}}},
		{`DELETE FROM archival WHERE id = 2`,
			map[int64][2]int64{1: {0, 3}, 3: {1, 0}, 5: {3, 0}, 6: {0, 7}}},
		// created_at edited by hand.
		{fmt.Sprintf(`UPDATE archival SET created_at = %d WHERE id = 6`, baseTime.Add(20*time.Minute).UnixNano()),
			map[int64][2]int64{1: {0, 3}, 3: {1, 6}, 5: {3, 6}, 6: {3, 0}, 7: {0, 0}}},
		// A key added: 3 leaves the stream for 4's conversation.
		{`UPDATE archival SET metadata_json = '{"session": "s"}' WHERE id = 3`,
			map[int64][2]int64{1: {0, 6}, 3: {0, 4}, 4: {3, 0}, 5: {1, 6}, 6: {1, 0}}},
		// A key removed: 4 joins the stream.
		{`UPDATE archival SET metadata_json = '{"note": "s"}' WHERE id = 4`,
			map[int64][2]int64{1: {0, 4}, 3: {0, 0}, 4: {1, 6}, 5: {4, 6}, 6: {4, 0}}},
		{`UPDATE archival SET valid_to = NULL WHERE id = 5`,
			map[int64][2]int64{1: {0, 4}, 4: {1, 5}, 5: {4, 6}, 6: {5, 0}}},
		{fmt.Sprintf(`UPDATE archival SET created_at = %d WHERE id = 7`, baseTime.Add(25*time.Minute).UnixNano()),
			map[int64][2]int64{6: {5, 7}, 7: {6, 0}}},
		// Moved (a merged entry's place) before every entry.
		{fmt.Sprintf(`UPDATE archival SET conversation_pos = 0, created_at = %d WHERE id = 9`, baseTime.Add(-time.Minute).UnixNano()),
			map[int64][2]int64{9: {0, 1}, 1: {9, 4}, 7: {6, 0}}},
		{`DELETE FROM archival WHERE id = 1`,
			map[int64][2]int64{9: {0, 4}, 4: {9, 5}}},
		// Times as far apart as int64 holds (-2^62 - 2^62 is -2^63, and
		// 2^62 - -2^62 is past int64): far, no error.
		{`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
			VALUES (20, 'c', 'far note', '{}', '[]', '', 4611686018427387904, 0)`, map[int64][2]int64{20: {0, 0}}},
		{`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
			VALUES (21, 'c', 'near note', '{}', '[]', '', -4611686018427387904, 0)`, map[int64][2]int64{20: {0, 0}, 21: {0, 0}}},
		// Moved to an owner with nothing indexed yet.
		{`UPDATE archival SET agent = 'd' WHERE id = 7`, map[int64][2]int64{6: {5, 0}, 7: {0, 0}}},
	}
)

// archivalLinks is archival_links as ids (0: none).
func archivalLinks(t *testing.T, db *sql.DB, q string) map[int64][2]int64 {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	got := map[int64][2]int64{}
	for rows.Next() {
		var id, b, a int64
		if err := rows.Scan(&id, &b, &a); err != nil {
			t.Fatal(err)
		}
		got[id] = [2]int64{b, a}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func checkStreamLinks(t *testing.T, step string, got, want map[int64][2]int64) {
	t.Helper()
	for _, id := range slices.Sorted(maps.Keys(want)) {
		if got[id] != want[id] {
			t.Errorf("after %q: entry %d's neighbours (before, after) %v, want %v", step, id, got[id], want[id])
		}
	}
}

// Entries naming no conversation take their neighbours in write order
// within the time gap: archival_links gives the scenario's, fts_archival
// holds what fts_archival_source says after each insert and hand edit,
// and text caches (whole and partial, following the edits from another
// pool, and partial ones loaded at each step) rank as SQL.
func TestArchivalStreamNeighbours(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db, other := openDBAt(t, path), openDBAt(t, path)
	words := []string{"", "apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris"}
	followed := followedCaches(t, db)
	for _, e := range streamEntries {
		insertArchival(t, other, archivalRow{ID: e.id, Agent: e.agent, Content: words[e.id] + " note", Metadata: e.meta, Created: baseTime.Add(e.at)})
	}
	const links = `SELECT id, COALESCE(before_id, 0), COALESCE(after_id, 0) FROM archival_links`
	for _, s := range streamSteps {
		step := s.sql
		if step == "" {
			step = "inserts"
		} else if _, err := other.ExecContext(ctx, s.sql); err != nil {
			t.Fatalf("%s: %v", s.sql, err)
		}
		checkStreamLinks(t, step, archivalLinks(t, db, links), s.links)
		if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
			t.Fatalf("after %s: fts_archival holds %v the view does not, lacks %v", step, extra, missing)
		}
		partialLikeSQL(t, db, step, []string{"a", "b", "c", "d"}, append(words[1:], "note", "apple note", "far"), followed)
	}
	checkQuietSupersession(t, db, func(q string, args ...any) {
		t.Helper()
		if _, err := other.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}, "changed = 1 OR id <> 20")
}

// checkQuietSupersession supersedes and restores entry 20 (near no
// other entry) and fails if either logs what logged says (an entry's
// text as changed: a text cache would read its statistics again for
// nothing; another entry: it was rewritten for nothing).
func checkQuietSupersession(t *testing.T, db *sql.DB, exec func(string, ...any), logged string) {
	t.Helper()
	var seq int64
	if err := db.QueryRow(`SELECT COALESCE(max(seq), 0) FROM search_text_log`).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE archival SET valid_to = 1 WHERE id = 20`)
	exec(`UPDATE archival SET valid_to = NULL WHERE id = 20`)
	var changed int
	if err := db.QueryRow(`SELECT count(*) FROM search_text_log WHERE seq > $1 AND (`+logged+`)`, seq).Scan(&changed); err != nil || changed > 0 {
		t.Fatalf("superseding and restoring an entry near no other logged %d entries (%s; %v)", changed, logged, err)
	}
}
