package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
)

// archivalIndexDrift rebuilds what fts_archival should hold from
// fts_archival_source into a temporary contentless FTS5 table and
// returns the rowids whose token instances differ.
func archivalIndexDrift(t *testing.T, db *sql.Conn) []int64 {
	t.Helper()
	ctx := context.Background()
	for _, q := range []string{
		`DROP TABLE IF EXISTS temp.fts_ref`,
		`CREATE VIRTUAL TABLE temp.fts_ref USING fts5(content, tags_text, metadata_values, context_before, context_after, content = '', contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2')`,
		`INSERT INTO temp.fts_ref (rowid, content, tags_text, metadata_values, context_before, context_after) SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source`,
		`CREATE VIRTUAL TABLE IF NOT EXISTS temp.fts_vocab_index USING fts5vocab(main, fts_archival, instance)`,
		`DROP TABLE IF EXISTS temp.fts_vocab_ref`,
		`CREATE VIRTUAL TABLE temp.fts_vocab_ref USING fts5vocab(temp, fts_ref, instance)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT doc FROM (
		SELECT * FROM (SELECT term, doc, col, offset FROM temp.fts_vocab_index EXCEPT SELECT term, doc, col, offset FROM temp.fts_vocab_ref)
		UNION ALL SELECT * FROM (SELECT term, doc, col, offset FROM temp.fts_vocab_ref EXCEPT SELECT term, doc, col, offset FROM temp.fts_vocab_index)) ORDER BY doc`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var bad []int64
	for rows.Next() {
		var d int64
		if err := rows.Scan(&d); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, d%1099511627776)
	}
	return bad
}

// Random multi-row hand edits of archival entries (conversation keys
// changing with valid_to, place, agent, created_at and id in one
// statement; inserts with explicit ids; upserts; deletes): the full-text
// rows stay what fts_archival_source gives.
func TestArchivalKeyRandomStatements(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "random archival edits, each checked against the whole index")
	ctx := context.Background()
	db := openDB(t, filepath.Join(t.TempDir(), "m.db"))
	if _, _, err := sqlite.Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rng := rand.New(rand.NewSource(1234))
	min := int64(60_000_000_000)
	metas := []string{`{}`, `{"conversation":"k"}`, `{"session":"k"}`, `{"thread":"j"}`, `{"conversation":""}`, `{"conversation_id":7}`, `{"note":"x"}`}
	words := strings.Fields("apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango nectar olive peach")
	row := func(id int) string {
		vt := "NULL"
		if rng.Intn(3) == 0 {
			vt = "1"
		}
		pos := "NULL"
		if rng.Intn(4) == 0 {
			pos = fmt.Sprint(rng.Intn(20))
		}
		return fmt.Sprintf("(%d, '%s', '%s', '%s', '[]', '', %d, 0, %s, %s)", id, []string{"a", "b"}[rng.Intn(2)], words[rng.Intn(len(words))],
			metas[rng.Intn(len(metas))], int64(rng.Intn(8))*min*10+int64(rng.Intn(3))*min, vt, pos)
	}
	var vals []string
	for i := 1; i <= 16; i++ {
		vals = append(vals, row(i))
	}
	const cols = `(id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to, conversation_pos)`
	exec := func(q string) bool {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Logf("%s: %v", q, err)
			return false
		}
		return true
	}
	exec(`INSERT INTO archival ` + cols + ` VALUES ` + strings.Join(vals, ", "))
	if bad := archivalIndexDrift(t, conn); len(bad) > 0 {
		t.Fatalf("after inserts: %v", bad)
	}
	steps := testenv.Scale(600, 3000)
	failures, applied := 0, 0
	for step := 0; step < steps && failures < 5; step++ {
		var ids []string
		for i := 1; i <= 40; i++ {
			if rng.Intn(6) == 0 {
				ids = append(ids, fmt.Sprint(i))
			}
		}
		if len(ids) == 0 {
			continue
		}
		in := strings.Join(ids, ", ")
		m1, m2 := metas[rng.Intn(len(metas))], metas[rng.Intn(len(metas))]
		var q string
		switch rng.Intn(12) {
		case 0:
			q = `UPDATE archival SET valid_to = CASE WHEN valid_to IS NULL THEN 1 END WHERE id IN (` + in + `)`
		case 1:
			q = fmt.Sprintf(`UPDATE archival SET metadata_json = CASE WHEN id %% 2 = 0 THEN '%s' ELSE '%s' END WHERE id IN (`+in+`)`, m1, m2)
		case 2:
			q = fmt.Sprintf(`UPDATE archival SET metadata_json = '%s', valid_to = CASE WHEN valid_to IS NULL THEN 1 END, conversation_pos = %d WHERE id IN (`+in+`)`, m1, rng.Intn(20))
		case 3:
			q = fmt.Sprintf(`UPDATE archival SET metadata_json = '%s', agent = CASE agent WHEN 'a' THEN 'b' ELSE 'a' END WHERE id IN (`+in+`)`, m1)
		case 4:
			q = fmt.Sprintf(`UPDATE archival SET id = id + %d, metadata_json = '%s' WHERE id IN (`+in+`)`, rng.Intn(5)+1, m1)
		case 5:
			q = fmt.Sprintf(`UPDATE archival SET id = id + 20, metadata_json = CASE WHEN metadata_json = '{}' THEN '%s' ELSE '{}' END WHERE id IN (`+in+`) AND id <= 20`, m1)
		case 6:
			q = `INSERT INTO archival ` + cols + ` VALUES ` + row(rng.Intn(40)+1) + `, ` + row(rng.Intn(40)+1)
		case 7:
			q = `DELETE FROM archival WHERE id IN (` + in + `)`
		case 8:
			q = `INSERT INTO archival ` + cols + ` VALUES ` + row(rng.Intn(40)+1) + ` ON CONFLICT (id) DO UPDATE SET metadata_json = excluded.metadata_json, valid_to = excluded.valid_to, created_at = excluded.created_at`
		case 9:
			q = fmt.Sprintf(`UPDATE archival SET created_at = created_at + %d, metadata_json = '%s' WHERE id IN (`+in+`)`, int64(rng.Intn(3)-1)*min*20, m1)
		case 10:
			q = fmt.Sprintf(`UPDATE archival SET metadata_json = json_set(metadata_json, '$.conversation', '%s') WHERE id IN (`+in+`)`, []string{"k", "j", ""}[rng.Intn(3)])
		case 11:
			q = `UPDATE archival SET conversation_pos = CASE WHEN conversation_pos IS NULL THEN 5 END, valid_to = NULL WHERE id IN (` + in + `)`
		}
		if !exec(q) {
			continue
		}
		applied++
		if bad := archivalIndexDrift(t, conn); len(bad) > 0 {
			failures++
			t.Errorf("step %d: %s: rows %v drift", step, q, bad)
			exec(`INSERT INTO fts_archival (fts_archival) VALUES ('delete-all')`)
			exec(`INSERT INTO fts_archival (rowid, content, tags_text, metadata_values, context_before, context_after) SELECT fts_rowid, content, tags_text, metadata_values, context_before, context_after FROM fts_archival_source`)
		}
	}
	if applied < steps/2 {
		t.Fatalf("%d statements applied: the edits tested too little", applied)
	}
}
