package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// hostileAgents are owner names that would break or widen an FTS5 MATCH
// if they ever reached one: the owner travels as a bound argument.
var hostileAgents = []string{`ann`, `"`, `a" OR "b`, `*`, `OR`, `NEAR(x y)`, `bob smith`, `日本語`, `ann*`, `-1`, ` `}

// ownerRangeStore is a store whose agents each hold archival entries and
// messages sharing the word "cache", so that a search for it matches
// every agent's rows.
func ownerRangeStore(t *testing.T) *Backend {
	t.Helper()
	ctx := context.Background()
	b, err := Open(ctx, filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	err = b.Write(ctx, func(tx *sql.Tx) error {
		for i, a := range hostileAgents {
			for j := range 6 {
				text := fmt.Sprintf("cache entry %d of agent %d %s", j, i, strings.Repeat("filler ", j))
				if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, created_at, valid_from)
					VALUES (?, ?, ?, ?, 0)`, a, text, "cache", int64(i*10+j)); err != nil {
					return err
				}
				// A batch each: a search re-orders a batch's messages
				// toward its best, and the scores compared are bm25's.
				if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
					VALUES (?, 'user', ?, ?, 0, ?)`, a, text, fmt.Sprintf("b%d", j), int64(i*10+j)); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// An agent's full-text leg returns its own rows only, in the order and
// with the scores a ranking of every match in the store gives them
// (bm25's statistics are the whole table's whatever the rowid range).
func TestFullTextOwnerRangeSameRanking(t *testing.T) {
	ctx := context.Background()
	b := ownerRangeStore(t)
	x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, c := range []struct {
		typ          search.ContentType
		table, index string
		weights      string
	}{
		{search.Archival, "archival", "fts_archival", "1.0, 2.0, 0.5"},
		{search.Messages, "messages", "fts_messages", "1.0, 0.5, 0.25"},
	} {
		for _, agent := range hostileAgents {
			got, err := x.Search(ctx, "cache filler", search.Scope{Agent: agent},
				search.NewOptions().Mode(search.FTS).ContentTypes(c.typ).Limit(4))

			if err != nil {
				t.Fatalf("%s of %q: %v", c.table, agent, err)
			}
			// The ranking before owner ranges: every match, then the owner.
			rows, err := b.DB().QueryContext(ctx, fmt.Sprintf(`SELECT t.id, bm25(%[2]s, %[3]s) AS s
				FROM %[2]s JOIN %[1]s t ON t.id = (%[2]s.rowid & 1099511627775)
				WHERE %[2]s MATCH '"cache" OR "filler"' AND t.agent = ? ORDER BY s, t.id LIMIT 4`, c.table, c.index, c.weights), agent)
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for rows.Next() {
				var id int64
				var s float64
				if err := rows.Scan(&id, &s); err != nil {
					t.Fatal(err)
				}
				want = append(want, fmt.Sprintf("%d:%v", id, s))
			}
			rows.Close()
			var have []string
			for _, r := range got {
				if r.Owner != agent {
					t.Fatalf("%s search of %q returned a row of %q", c.table, agent, r.Owner)
				}
				have = append(have, fmt.Sprintf("%d:%v", r.ID, r.Source.BM25))
			}
			if len(want) != 4 || !slices.Equal(have, want) {
				t.Fatalf("%s search of %q = %v, want %v", c.table, agent, have, want)
			}
		}
	}
}

// With an owner the MATCH is bounded to the owner's rowid range (FTS5
// seeks to it: the other owners' matches are never visited); without one
// (Scope.All) it is not. fts_blocks is ranged too since migration 0021,
// and with Shared a second MATCH runs over the range of each owner
// sharing blocks with the agent (not FTS5's "=" per shared rowid: each
// MATCH recounts bm25's document frequencies over the whole table).
func TestFullTextOwnerRangePlan(t *testing.T) {
	ctx := context.Background()
	b := ownerRangeStore(t)
	plan := func(p *driver.FullTextParams) string {
		q, args, _ := b.SearchDialect().FullText(p)
		rows, err := b.DB().QueryContext(ctx, "EXPLAIN QUERY PLAN "+q, args...)
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
			if strings.Contains(detail, "VIRTUAL TABLE INDEX") {
				out = append(out, detail)
			}
		}
		return strings.Join(out, "\n")
	}
	p := func(index, owner string, shared bool) *driver.FullTextParams {
		table, alias := strings.TrimPrefix(index, "fts_"), "a"
		return &driver.FullTextParams{Table: table, Alias: alias, Index: index, Weights: []float64{1, 1, 1},
			Match: `"cache"`, Columns: alias + ".id", Where: "1 = 1", Limit: 5, Owner: owner, Shared: shared}
	}
	for _, c := range []struct {
		index, owner string
		shared       bool
		ranged       bool
	}{
		{"fts_archival", "ann", false, true},
		{"fts_messages", `a" OR "b`, false, true},
		{"fts_archival", "", false, false},
		{"fts_blocks", "ann", false, true},
		{"fts_blocks", "ann", true, true},
		{"fts_blocks", "", false, false},
	} {
		got := plan(p(c.index, c.owner, c.shared))
		// FTS5's index string: M for the MATCH, > and < for rowid >= and
		// <=, = for a rowid looked up.
		lines := strings.Split(got, "\n")
		_, idx, _ := strings.Cut(lines[0], "VIRTUAL TABLE INDEX ")
		if ranged := strings.Contains(idx, ">") && strings.Contains(idx, "<"); ranged != c.ranged {
			t.Errorf("%s owner %q: plan\n%s\nbounds the rowids %v, want %v", c.index, c.owner, got, ranged, c.ranged)
		}
		if c.shared {
			// The third MATCH, over the whole table, runs only for an
			// agent with more sharing owners than maxSharerRanges.
			if len(lines) != 3 || !strings.HasSuffix(lines[1], "><") || !strings.HasSuffix(lines[2], "INDEX 0:M3") {
				t.Errorf("%s owner %q with shares: plan\n%s\nwant a second MATCH over the sharers' ranges and a third over the table", c.index, c.owner, got)
			}
		} else if len(lines) != 1 {
			t.Errorf("%s owner %q: plan\n%s\nwant one MATCH", c.index, c.owner, got)
		}
	}
}

// A row that changes owner moves to the new owner's rowid range, and a
// deleted row leaves the index: the triggers of migration 0019 keep the
// index equal to the rows (FTS5's integrity-check), for archival entries
// and messages alike.
func TestFullTextOwnerRangeFollowsRows(t *testing.T) {
	ctx := context.Background()
	b := ownerRangeStore(t)
	x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	count := func(typ search.ContentType, agent string) int {
		t.Helper()
		rs, err := x.Search(ctx, "cache", search.Scope{Agent: agent}, search.NewOptions().Mode(search.FTS).ContentTypes(typ).Limit(100))
		if err != nil {
			t.Fatal(err)
		}
		return len(rs)
	}
	for _, c := range []struct {
		typ          search.ContentType
		table, clear string
	}{{search.Archival, "archival", "content = 'moved again', tags_text = ''"}, {search.Messages, "messages", "content = 'moved again'"}} {
		steps := []struct {
			stmt       string
			ann, newby int
		}{
			{`UPDATE ` + c.table + ` SET agent = 'newcomer' WHERE id = (SELECT min(id) FROM ` + c.table + ` WHERE agent = 'ann')`, 5, 1},
			{`UPDATE ` + c.table + ` SET ` + c.clear + ` WHERE agent = 'newcomer'`, 5, 0},
			{`DELETE FROM ` + c.table + ` WHERE id = (SELECT max(id) FROM ` + c.table + ` WHERE agent = 'ann')`, 4, 0},
		}
		for _, s := range steps {
			if _, err := b.DB().ExecContext(ctx, s.stmt); err != nil {
				t.Fatalf("%s: %v", s.stmt, err)
			}
			if got := count(c.typ, "ann"); got != s.ann {
				t.Errorf("after %s: ann has %d %s matches, want %d", s.stmt, got, c.table, s.ann)
			}
			if got := count(c.typ, "newcomer"); got != s.newby {
				t.Errorf("after %s: newcomer has %d %s matches, want %d", s.stmt, got, c.table, s.newby)
			}
		}
	}
	for _, tbl := range []string{"fts_archival", "fts_messages"} {
		if _, err := b.DB().ExecContext(ctx, `INSERT INTO `+tbl+` (`+tbl+`) VALUES ('integrity-check')`); err != nil {
			t.Errorf("%s integrity-check: %v", tbl, err)
		}
	}
	// An id past the range of 40 bits would land in another owner's range.
	if _, err := b.DB().ExecContext(ctx, `INSERT INTO archival (id, agent, content, created_at, valid_from)
		VALUES (1099511627776, 'ann', 'x', 0, 0)`); err == nil {
		t.Error("an archival id of 2^40 was accepted")
	}
}

// Owner numbers are never reused and a rowid is owner number × 2^40 + id,
// so the 2^23 − 1st owner is the last whose rows fit in 63 bits. A new
// agent after it must be refused with an error saying why (it was "datatype
// mismatch": SQLite turned the overflowing product into a REAL), while the
// agents already numbered keep writing and finding their rows.
func TestFullTextOwnerNumbersExhausted(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, filepath.Join(t.TempDir(), "o.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	db := b.DB()
	// The owners before the last one, as if 2^23 − 2 agents had written.
	if _, err := db.ExecContext(ctx, `INSERT INTO fts_owners (no, name) VALUES (8388606, 'earlier')`); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		table, agent string
		ok           bool
	}{
		{"archival", "last", true}, // number 2^23 − 1
		{"archival", "after", false},
		{"messages", "after", false},
		{"archival", "earlier", true},
		{"messages", "last", true},
	} {
		stmt := `INSERT INTO archival (agent, content, created_at, valid_from) VALUES (?, 'cache numbered', 0, 0)`
		if c.table == "messages" {
			stmt = `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', 'cache numbered', 'b', 1, 0)`
		}
		_, err := db.ExecContext(ctx, stmt, c.agent)
		switch {
		case c.ok && err != nil:
			t.Errorf("%s of %q: %v", c.table, c.agent, err)
		case !c.ok && err == nil:
			t.Errorf("%s of %q was accepted past the last owner number", c.table, c.agent)
		case !c.ok && !strings.Contains(err.Error(), "owner numbers"):
			t.Errorf("%s of %q: error %q does not say the owner numbers ran out", c.table, c.agent, err)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM fts_owners WHERE name = 'after'`).Scan(&n); err != nil || n != 0 {
		t.Errorf("a refused agent was numbered (%d, %v)", n, err)
	}
	x, err := searchindex.NewIndex(ctx, db, b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, agent := range []string{"last", "earlier"} {
		rs, err := x.Search(ctx, "cache", search.Scope{Agent: agent}, search.NewOptions().Mode(search.FTS))
		if err != nil || len(rs) == 0 {
			t.Errorf("search of %q: %d results, %v", agent, len(rs), err)
		}
		for _, r := range rs {
			if r.Owner != agent {
				t.Errorf("search of %q returned a row of %q", agent, r.Owner)
			}
		}
	}
}
