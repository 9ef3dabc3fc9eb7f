package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
)

// archivalEdits makes random multi-row hand edits of archival entries:
// conversation keys changing with valid_to, place, owner, id and
// created_at in one statement; inserts with explicit ids; upserts;
// deletes. ids run from 1 to 40; a statement may be refused (a unique
// id), which the caller skips.
type archivalEdits struct {
	rng   *rand.Rand
	metas []string
	words []string
}

const archivalEditColumns = `(id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to, conversation_pos)`

func newArchivalEdits(seed int64) *archivalEdits {
	return &archivalEdits{
		rng:   rand.New(rand.NewSource(seed)),
		metas: []string{`{}`, `{"conversation":"k"}`, `{"session":"k"}`, `{"thread":"j"}`, `{"conversation":""}`, `{"conversation_id":7}`, `{"note":"x"}`},
		words: strings.Fields("apple banana cherry damson elder fig grape hazel"),
	}
}

// row is the VALUES tuple of an entry with the given id.
func (g *archivalEdits) row(id int) string {
	const minute = int64(60_000_000_000)
	r := g.rng
	vt := "NULL"
	if r.Intn(3) == 0 {
		vt = "1"
	}
	pos := "NULL"
	if r.Intn(4) == 0 {
		pos = fmt.Sprint(r.Intn(20))
	}
	return fmt.Sprintf("(%d, '%s', '%s %s', '%s', '[]', '', %d, 0, %s, %s)", id, []string{"a", "b"}[r.Intn(2)],
		g.words[r.Intn(len(g.words))], g.words[r.Intn(len(g.words))],
		g.metas[r.Intn(len(g.metas))], int64(r.Intn(8))*minute*10+int64(r.Intn(3))*minute, vt, pos)
}

// inserts is the statement writing entries 1 to 16.
func (g *archivalEdits) inserts() string {
	var vals []string
	for i := 1; i <= 16; i++ {
		vals = append(vals, g.row(i))
	}
	return `INSERT INTO archival ` + archivalEditColumns + ` VALUES ` + strings.Join(vals, ", ")
}

// next is a random edit.
func (g *archivalEdits) next() string {
	r := g.rng
	var ids []string
	for len(ids) == 0 {
		for i := 1; i <= 40; i++ {
			if r.Intn(6) == 0 {
				ids = append(ids, fmt.Sprint(i))
			}
		}
	}
	in := strings.Join(ids, ", ")
	m1, m2 := g.metas[r.Intn(len(g.metas))], g.metas[r.Intn(len(g.metas))]
	const minute = int64(60_000_000_000)
	switch r.Intn(13) {
	case 0:
		return `UPDATE archival SET valid_to = CASE WHEN valid_to IS NULL THEN 1 END WHERE id IN (` + in + `)`
	case 1:
		return fmt.Sprintf(`UPDATE archival SET metadata_json = CASE WHEN id %% 2 = 0 THEN '%s' ELSE '%s' END WHERE id IN (`+in+`)`, m1, m2)
	case 2:
		return fmt.Sprintf(`UPDATE archival SET metadata_json = '%s', valid_to = CASE WHEN valid_to IS NULL THEN 1 END, conversation_pos = %d WHERE id IN (`+in+`)`, m1, r.Intn(20))
	case 3:
		return fmt.Sprintf(`UPDATE archival SET metadata_json = '%s', agent = CASE agent WHEN 'a' THEN 'b' ELSE 'a' END WHERE id IN (`+in+`)`, m1)
	case 4:
		return fmt.Sprintf(`UPDATE archival SET id = id + %d, metadata_json = '%s' WHERE id IN (`+in+`)`, r.Intn(5)+1, m1)
	case 5:
		return fmt.Sprintf(`UPDATE archival SET id = id + 20, metadata_json = CASE WHEN metadata_json = '{}' THEN '%s' ELSE '{}' END WHERE id IN (`+in+`) AND id <= 20`, m1)
	case 6:
		return fmt.Sprintf(`UPDATE archival SET id = id - 20, metadata_json = '%s' WHERE id IN (`+in+`) AND id > 20`, m2)
	case 7:
		return `INSERT INTO archival ` + archivalEditColumns + ` VALUES ` + g.row(r.Intn(40)+1) + `, ` + g.row(r.Intn(40)+1)
	case 8:
		return `DELETE FROM archival WHERE id IN (` + in + `)`
	case 9:
		return `INSERT INTO archival ` + archivalEditColumns + ` VALUES ` + g.row(r.Intn(40)+1) + ` ON CONFLICT (id) DO UPDATE SET metadata_json = excluded.metadata_json, valid_to = excluded.valid_to, created_at = excluded.created_at`
	case 10:
		return fmt.Sprintf(`UPDATE archival SET created_at = created_at + %d, metadata_json = '%s' WHERE id IN (`+in+`)`, int64(r.Intn(3)-1)*minute*20, m1)
	case 11:
		return fmt.Sprintf(`UPDATE archival SET metadata_json = json_set(metadata_json, '$.conversation', '%s') WHERE id IN (`+in+`)`, []string{"k", "j", ""}[r.Intn(3)])
	default:
		return `UPDATE archival SET conversation_pos = CASE WHEN conversation_pos IS NULL THEN 5 END, valid_to = NULL WHERE id IN (` + in + `)`
	}
}

// archivalIndexDrift rebuilds what fts_archival should hold from
// fts_archival_source into a temporary FTS5 table on conn (fts_archival
// keeps no content to compare) and returns the entries whose words and
// positions differ between the two.
func archivalIndexDrift(t *testing.T, conn *sql.Conn) []int64 {
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
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rows, err := conn.QueryContext(ctx, `SELECT DISTINCT doc FROM (
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
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return bad
}

// archivalEditRun applies steps random edits through one connection to
// a new store and calls check after each applied one; it fails if fewer
// than half applied.
func archivalEditRun(t *testing.T, seed int64, steps int, check func(step int, q string, conn *sql.Conn, db *sql.DB)) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db, other := openDBAt(t, path), openDBAt(t, path)
	conn, err := other.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	g := newArchivalEdits(seed)
	if _, err := conn.ExecContext(ctx, g.inserts()); err != nil {
		t.Fatal(err)
	}
	check(-1, "inserts", conn, db)
	applied := 0
	for step := range steps {
		q := g.next()
		if _, err := conn.ExecContext(ctx, q); err != nil {
			continue // refused: a unique id
		}
		applied++
		check(step, q, conn, db)
		if t.Failed() {
			return
		}
	}
	if applied < steps/2 {
		t.Fatalf("%d of %d statements applied: the edits tested too little", applied, steps)
	}
}

// The full-text rows stay what fts_archival_source gives after each
// random hand edit.
func TestArchivalKeyRandomStatements(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "random archival edits, each checked against the whole index")
	archivalEditRun(t, 1234, testenv.Scale(600, 3000), func(step int, q string, conn *sql.Conn, _ *sql.DB) {
		if bad := archivalIndexDrift(t, conn); len(bad) > 0 {
			t.Errorf("step %d: %s: entries %v are not indexed as fts_archival_source gives them", step, q, bad)
		}
	})
}

// Caches following the log, and a partial cache loaded at each step, rank
// as SQL does after each random hand edit written from another pool.
func TestArchivalKeyEditsFollowedLikeSQL(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "random archival edits, each step's rankings compared with SQL's")
	var followed map[string]*searchindex.Index
	words := newArchivalEdits(0).words
	archivalEditRun(t, 77, 150, func(step int, q string, _ *sql.Conn, db *sql.DB) {
		if followed == nil {
			followed = followedCaches(t, db)
		}
		partialLikeSQL(t, db, fmt.Sprintf("step %d: %s", step, q), []string{"a", "b"}, words, followed)
	})
}
