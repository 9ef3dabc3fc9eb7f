package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// ownerRangeVocab are the words the random histories write and the
// differential check queries, one by one.
var ownerRangeVocab = []string{"cache", "comet", "greyhound", "ranking", "owner", "batch", "token", "shard", "latency", "budget"}

// ftsSnapshot is every (rowid, bm25) a MATCH of each vocabulary word
// returns from index, in rowid order: equal snapshots mean the two
// indexes hold the same rows with the same terms, lengths and statistics.
func ftsSnapshot(t *testing.T, db *sql.DB, index, weights string) string {
	t.Helper()
	var b strings.Builder
	for _, w := range ownerRangeVocab {
		rows, err := db.Query(fmt.Sprintf(`SELECT rowid, bm25(%[1]s, %[2]s) FROM %[1]s WHERE %[1]s MATCH ? ORDER BY rowid`, index, weights), w)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			var s float64
			if err := rows.Scan(&id, &s); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %d %.12g\n", w, id, s)
		}
		rows.Close()
	}
	return b.String()
}

// After any history of inserts, deletes, edits, moves to another agent
// and renumbered seqs (agents first seen in any order, several agents
// writing the same batch ids), fts_archival and fts_messages equal the
// indexes migration 0019 builds from the rows: each row under its
// owner's number, each message with its current neighbours.
func TestFullTextOwnerRangeRandomHistory(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			dir := t.TempDir()
			b, err := Open(ctx, filepath.Join(dir, "h.db"), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			db := b.DB()
			agents := []string{"zed", "ann", "Ann", "a b", "日本", "-1", "ann ", "b"}
			rng.Shuffle(len(agents), func(i, j int) { agents[i], agents[j] = agents[j], agents[i] })
			text := func() string {
				n := 1 + rng.Intn(6)
				w := make([]string, n)
				for i := range w {
					w[i] = ownerRangeVocab[rng.Intn(len(ownerRangeVocab))]
				}
				return strings.Join(w, " ")
			}
			agent := func() string { return agents[rng.Intn(len(agents))] }
			batch := func() string { return fmt.Sprintf("s%d", rng.Intn(3)) }
			ops := []string{
				`INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from) VALUES (?, ?, ?, json_object('k', ?), 0, 0)`,
				`INSERT OR IGNORE INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, ?, ?, 0)`,
				`DELETE FROM archival WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`,
				`DELETE FROM messages WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`,
				`UPDATE archival SET agent = ? WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`,
				`UPDATE archival SET content = ? WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`,
				`UPDATE OR IGNORE messages SET agent = ? WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`,
				`UPDATE messages SET content = ? WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`,
				`UPDATE OR IGNORE messages SET seq = ? WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`,
				`UPDATE OR IGNORE messages SET batch_id = ? WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`,
			}
			for range 400 {
				i := rng.Intn(len(ops))
				var args []any
				switch i {
				case 0:
					args = []any{agent(), text(), text(), text()}
				case 1:
					args = []any{agent(), text(), batch(), rng.Intn(6)}
				case 4, 6:
					args = []any{agent()}
				case 5, 7:
					args = []any{text()}
				case 8:
					args = []any{rng.Intn(6)}
				case 9:
					args = []any{batch()}
				}
				if _, err := db.ExecContext(ctx, ops[i], args...); err != nil {
					t.Fatalf("%s %v: %v", ops[i], args, err)
				}
			}
			arch, msgs := ftsSnapshot(t, db, "fts_archival", "1.0, 2.0, 0.5"), ftsSnapshot(t, db, "fts_messages", "1.0, 0.5, 0.25")

			// The same rows indexed afresh, as migration 0019 does.
			fresh := filepath.Join(dir, "fresh.db")
			if _, err := db.ExecContext(ctx, `VACUUM INTO ?`, fresh); err != nil {
				t.Fatal(err)
			}
			f, err := sql.Open(Driver, fresh)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for _, s := range []string{
				`INSERT INTO fts_archival (fts_archival) VALUES ('delete-all')`,
				`INSERT INTO fts_archival (rowid, content, tags_text, metadata_values)
				 SELECT (SELECT no FROM fts_owners WHERE name = archival.agent) * 1099511627776 + id, content, tags_text,
				        (SELECT COALESCE(group_concat(value, ' '), '') FROM json_tree(archival.metadata_json) WHERE atom IS NOT NULL)
				 FROM archival`,
				`INSERT INTO fts_messages (fts_messages) VALUES ('delete-all')`,
				`INSERT INTO fts_messages (rowid, content, context_before, context_after, date)
				 SELECT fts_rowid, content, context_before, context_after, date FROM fts_messages_source`,
			} {
				if _, err := f.ExecContext(ctx, s); err != nil {
					t.Fatalf("%s: %v", s, err)
				}
			}
			if got := ftsSnapshot(t, f, "fts_archival", "1.0, 2.0, 0.5"); got != arch {
				t.Errorf("fts_archival after the history differs from a fresh index:\n%s", diffLines(arch, got))
			}
			if got := ftsSnapshot(t, f, "fts_messages", "1.0, 0.5, 0.25"); got != msgs {
				t.Errorf("fts_messages after the history differs from a fresh index:\n%s", diffLines(msgs, got))
			}
		})
	}
}

// diffLines lists the lines only one of live and fresh has.
func diffLines(live, fresh string) string {
	a, b := strings.Split(live, "\n"), strings.Split(fresh, "\n")
	var out []string
	for _, l := range a {
		if !slices.Contains(b, l) {
			out = append(out, "live only:  "+l)
		}
	}
	for _, l := range b {
		if !slices.Contains(a, l) {
			out = append(out, "fresh only: "+l)
		}
	}
	if len(out) > 20 {
		out = append(out[:20], "...")
	}
	return strings.Join(out, "\n")
}
