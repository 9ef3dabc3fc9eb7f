package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/testenv"
)

// windowCase is one small conversation (or stream) of five entries and one
// edit of one of them.
type windowCase struct {
	agent  string
	stream bool
	mask   int // bit k: entry k superseded
	edit   string
}

func windowCases(pg bool) (setup []string, edits []windowCase) {
	c := 0
	for _, stream := range []bool{false, true} {
		for mask := range 32 {
			for i := range 5 {
				ops := []string{"supersede", "restore", "delete", "rekey", "unkey", "later", "sooner"}
				for j := range 7 {
					ops = append(ops, fmt.Sprintf("move%d", j))
				}
				for _, op := range ops {
					c++
					agent := fmt.Sprintf("e%d", c)
					base := int64(c) * 10
					var vals []string
					for k := range 5 {
						meta := `{"session": "k"}`
						if stream {
							meta = `{}`
						}
						vt := "NULL"
						if mask&(1<<k) != 0 {
							vt = "1"
						}
						// 60 s apart, a gap of an hour between the third and fourth.
						at := int64(k) * 60_000_000_000
						if stream && k >= 3 && mask&16 != 0 {
							at += 3600_000_000_000
						}
						vals = append(vals, fmt.Sprintf("(%d, '%s', 'w%dx%d', '%s', '[]', '', %d, 0, %s)", base+int64(k)+1, agent, c, k, meta, at, vt))
					}
					setup = append(setup, `INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES `+strings.Join(vals, ", "))
					id := base + int64(i) + 1
					var q string
					switch {
					case op == "supersede":
						q = fmt.Sprintf(`UPDATE archival SET valid_to = 1 WHERE id = %d`, id)
					case op == "restore":
						q = fmt.Sprintf(`UPDATE archival SET valid_to = NULL WHERE id = %d`, id)
					case op == "delete":
						q = fmt.Sprintf(`DELETE FROM archival WHERE id = %d`, id)
					case op == "rekey":
						q = fmt.Sprintf(`UPDATE archival SET metadata_json = '{"session": "k2"}' WHERE id = %d`, id)
					case op == "unkey":
						if stream {
							q = fmt.Sprintf(`UPDATE archival SET metadata_json = '{"session": "k"}' WHERE id = %d`, id)
						} else {
							q = fmt.Sprintf(`UPDATE archival SET metadata_json = '{}' WHERE id = %d`, id)
						}
					case op == "later":
						q = fmt.Sprintf(`UPDATE archival SET created_at = created_at + 3600000000000 WHERE id = %d`, id)
					case op == "sooner":
						q = fmt.Sprintf(`UPDATE archival SET created_at = created_at - 3600000000000 WHERE id = %d`, id)
					case strings.HasPrefix(op, "move"):
						var j int64
						fmt.Sscanf(op, "move%d", &j)
						q = fmt.Sprintf(`UPDATE archival SET conversation_pos = %d WHERE id = %d`, base+j, id)
					}
					edits = append(edits, windowCase{agent: agent, stream: stream, mask: mask, edit: q})
				}
			}
		}
	}
	return setup, edits
}

func TestArchivalWindowExhaustiveSQLite(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "4,480 edits, each row's index compared with SQL's")
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	setup, edits := windowCases(false)
	tx, _ := db.BeginTx(ctx, nil)
	for _, q := range setup {
		if _, err := tx.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range edits {
		if _, err := tx.Exec(e.edit); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	extra, missing := archivalDrift(t, db)
	t.Logf("%d cases; extra %d missing %d", len(edits), len(extra), len(missing))
	if len(extra)+len(missing) > 0 {
		docs := map[string]bool{}
		for _, s := range append(extra, missing...) {
			docs[strings.SplitN(s, "/", 2)[0]] = true
		}
		n := 0
		for d := range docs {
			var rowid int64
			fmt.Sscan(d, &rowid)
			id := rowid % 1099511627776
			var agent string
			db.QueryRow(`SELECT agent FROM archival WHERE id = ?`, id).Scan(&agent)
			for _, e := range edits {
				if e.agent == agent && n < 20 {
					n++
					t.Errorf("entry %d stale: case %+v", id, e)
				}
			}
		}
	}
}

func TestArchivalWindowExhaustivePostgres(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "4,480 edits, each row's index compared with SQL's")
	ctx := context.Background()
	_, b := openPGStore(t)
	setup, edits := windowCases(true)
	if err := b.Write(ctx, func(tx *sql.Tx) error {
		for _, q := range setup {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
		t.Fatalf("after setup: %d stale", len(bad))
	}
	if err := b.Write(ctx, func(tx *sql.Tx) error {
		for _, e := range edits {
			if _, err := tx.ExecContext(ctx, e.edit); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	bad := archivalStalePostgres(t, b.DB())
	t.Logf("%d cases; %d stale", len(edits), len(bad))
	kinds := map[string]int{}
	for i, id := range bad {
		var agent string
		b.DB().QueryRow(`SELECT agent FROM archival WHERE id = $1`, id).Scan(&agent)
		for _, e := range edits {
			if e.agent == agent {
				op := strings.Fields(e.edit)[3]
				kinds[fmt.Sprintf("stream=%v %s", e.stream, op)]++
				if i < 12 {
					t.Errorf("entry %d stale: case %+v", id, e)
				}
			}
		}
	}
	t.Logf("stale by kind: %v", kinds)
}
