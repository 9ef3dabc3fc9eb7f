package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory/sqlite"
)

// TestArchivalKeyReadFromIndex holds the archival full-text triggers and
// neighbour views to reading an entry's own conversation key from the
// index archival_conversation_by_id: conversation_key is a virtual column,
// computed from metadata_json at every use, and the triggers and views
// used it up to eight times a row.
func TestArchivalKeyReadFromIndex(t *testing.T) {
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "m.db"))
	if _, _, err := sqlite.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	rows, err := db.QueryContext(ctx, `SELECT name, sql FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'archival' AND sql LIKE '%conversation_key%'`)
	if err != nil {
		t.Fatal(err)
	}
	triggers := 0
	for rows.Next() {
		var name, body string
		if err := rows.Scan(&name, &body); err != nil {
			t.Fatal(err)
		}
		triggers++
		if n := strings.Count(body, "new.conversation_key"); n > 0 {
			t.Errorf("trigger %s computes new.conversation_key %d times", name, n)
		}
		// An UPDATE trigger computes the old key only where the metadata
		// changed; a DELETE trigger has no row to read it from.
		if strings.Contains(body, " AFTER UPDATE ") {
			all := strings.Count(body, "old.conversation_key")
			guarded := strings.Count(body, "CASE WHEN old.metadata_json IS new.metadata_json THEN (SELECT k.conversation_key FROM archival k INDEXED BY archival_conversation_by_id WHERE k.id = new.id) ELSE old.conversation_key END")
			if all != guarded {
				t.Errorf("trigger %s computes old.conversation_key %d times where the metadata did not change", name, all-guarded)
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	rows.Close()
	if triggers < 6 {
		t.Fatalf("%d archival triggers read conversation_key; want the full-text and stream triggers", triggers)
	}
	for _, q := range []string{
		`SELECT before_id, after_id FROM archival_links WHERE id = 1`,
		`SELECT context_before, context_after FROM fts_archival_source WHERE id = 1`,
	} {
		plan := queryPlan(t, db, q)
		if !strings.Contains(plan, "SEARCH a USING INDEX archival_conversation_by_id (id=?)") {
			t.Errorf("%s reads its own row's key without the index:\n%s", q, plan)
		}
	}
}

// queryPlan is EXPLAIN QUERY PLAN's details for q, one a line.
func queryPlan(t *testing.T, db *sql.DB, q string) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN " + q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(out, "\n")
}
