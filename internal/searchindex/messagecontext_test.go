package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// ftsMessagesDrift returns what fts_messages holds that fts_messages_source
// (what it should hold) does not, and the reverse: every (term, row,
// column, offset) of the live index against an index built afresh from
// the view.
func ftsMessagesDrift(t *testing.T, db *sql.DB) (extra, missing []string) {
	t.Helper()
	return ftsDrift(t, db, "fts_messages", "content, context_before, context_after, date", "fts_messages_source")
}

// ftsDrift is ftsMessagesDrift for the FTS5 table index, whose columns
// are cols and whose rows the view source gives (fts_rowid and cols).
//
// Its temporary tables exist on one connection only: every statement
// runs on one pinned connection (the Index's loaders take others from
// the same pool meanwhile).
func ftsDrift(t *testing.T, db *sql.DB, index, cols, source string) (extra, missing []string) {
	t.Helper()
	ctx := context.Background()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		`DROP TABLE IF EXISTS temp.fts_check_vocab`,
		`DROP TABLE IF EXISTS temp.fts_live_vocab`,
		`DROP TABLE IF EXISTS fts_check`,
		`CREATE VIRTUAL TABLE fts_check USING fts5(` + cols + `, content = '',
			contentless_delete = 1, tokenize = 'porter unicode61 remove_diacritics 2')`,
		`INSERT INTO fts_check (rowid, ` + cols + `)
			SELECT fts_rowid, ` + cols + ` FROM ` + source,
		`CREATE VIRTUAL TABLE temp.fts_check_vocab USING fts5vocab(main, fts_check, instance)`,
		`CREATE VIRTUAL TABLE temp.fts_live_vocab USING fts5vocab(main, ` + index + `, instance)`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	read := func(tbl string) []string {
		rows, err := conn.QueryContext(ctx, `SELECT term, doc, col, offset FROM `+tbl)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var term, col string
			var doc, off int64
			if err := rows.Scan(&term, &doc, &col, &off); err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%d/%s/%d/%s", doc, col, off, term))
		}
		return out
	}
	live, want := read("temp.fts_live_vocab"), read("temp.fts_check_vocab")
	wantSet := map[string]bool{}
	for _, s := range want {
		wantSet[s] = true
	}
	liveSet := map[string]bool{}
	for _, s := range live {
		liveSet[s] = true
		if !wantSet[s] {
			extra = append(extra, s)
		}
	}
	for _, s := range want {
		if !liveSet[s] {
			missing = append(missing, s)
		}
	}
	for _, q := range []string{`DROP TABLE temp.fts_check_vocab`, `DROP TABLE temp.fts_live_vocab`, `DROP TABLE fts_check`} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	return extra, missing
}

// TestMessageContextFollowsHandEdits: messages inserted out of seq order,
// several in one statement, and then changed by hand (seq, batch, agent,
// content, all at once, many rows per statement) and deleted: after each
// step fts_messages holds exactly what fts_messages_source says, and a
// text cache kept up to date through the log (another connection pool
// writes) ranks exactly as SQL.
func TestMessageContextFollowsHandEdits(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "rankings compared after hand edits, one goroutine")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	other := openDBAt(t, path)
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	cached, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cached.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(7, 9))
	vocab := strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango
		nectar olive peach quince radish sage thyme`)
	text := func() string {
		w := make([]string, 1+r.IntN(5))
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	// Out of seq order, with gaps, across two agents sharing batch ids.
	for _, agent := range []string{"a", "b"} {
		seqs := []int{5, 1, 3, 2, 4, 9, 7, 8}
		for _, s := range seqs {
			if _, err := other.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES (?, 'user', ?, ?, ?, ?)`, agent, text(), []string{"s1", "s2"}[s%2], s, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Several rows in one statement, adjacent to each other.
	if _, err := other.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES
		('a', 'user', ?, 's3', 2, 1), ('a', 'user', ?, 's3', 1, 1), ('a', 'user', ?, 's3', 3, 1)`, text(), text(), text()); err != nil {
		t.Fatal(err)
	}
	queries := append([]string{}, vocab...)
	queries = append(queries, "apple fig", "mango olive thyme", "banana banana sage",
		"kale on 8 May 2023", "January 1970") // a message's date is indexed too
	check := func(step string) {
		t.Helper()
		if extra, missing := ftsMessagesDrift(t, db); len(extra)+len(missing) > 0 {
			slices.Sort(extra)
			slices.Sort(missing)
			t.Fatalf("after %s: fts_messages holds %d entries the view does not (%v), lacks %d (%v)",
				step, len(extra), extra[:min(len(extra), 8)], len(missing), missing[:min(len(missing), 8)])
		}
		for _, agent := range []string{"a", "b"} {
			for _, q := range queries {
				o := func() *search.Options {
					return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(50)
				}
				want, err := sqlx.Search(ctx, q, search.Scope{Agent: agent}, o())
				if err != nil {
					t.Fatal(err)
				}
				got, err := cached.Search(ctx, q, search.Scope{Agent: agent}, o())
				if err != nil {
					t.Fatal(err)
				}
				if len(want) != len(got) {
					t.Fatalf("after %s, %s %q: SQL %d results, cache %d\nSQL   %v\ncache %v", step, agent, q, len(want), len(got), keys(want), keys(got))
				}
				if err := sameRanking(want, got); err != nil {
					t.Fatalf("after %s, %s %q: %v\nSQL   %v\ncache %v", step, agent, q, err, keys(want), keys(got))
				}
			}
		}
	}
	check("inserts")
	before := searchindex.TextCacheAnswers(cached)
	for _, q := range []string{
		`UPDATE messages SET content = 'quince quince ' || content WHERE seq = 3`,
		`UPDATE messages SET content = content || ' sage ' || seq WHERE agent = 'a' AND batch_id = 's1'`,
		`UPDATE messages SET content = 'kale', seq = seq + 20 WHERE agent = 'b' AND batch_id = 's2' AND seq IN (1, 3, 5)`,
		`UPDATE messages SET seq = seq + 100 WHERE agent = 'a' AND batch_id = 's2' AND seq IN (3, 5)`,
		`UPDATE messages SET seq = 6 WHERE agent = 'a' AND batch_id = 's2' AND seq = 105`,
		`UPDATE messages SET seq = 2 WHERE agent = 'a' AND batch_id = 's2' AND seq = 103`,
		`UPDATE messages SET batch_id = 's2' WHERE agent = 'b' AND seq = 1`,
		`UPDATE messages SET agent = 'b', batch_id = 's3', seq = 4 WHERE agent = 'a' AND batch_id = 's3' AND seq = 3`,
		`UPDATE messages SET agent = 'a' WHERE agent = 'b' AND batch_id = 's2' AND seq = 8`,
		`UPDATE messages SET created_at = created_at + 1, role = 'assistant' WHERE seq % 2 = 0`,
		`UPDATE messages SET created_at = 1683554160000000000 WHERE seq % 3 = 0`, // 8 May 2023, 13:56 UTC
		`DELETE FROM messages WHERE agent = 'a' AND batch_id = 's3' AND seq = 2`,
		`DELETE FROM messages WHERE agent = 'b' AND batch_id = 's1'`,
		`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ('a', 'user', 'peach iris', 's1', 3, 9)`,
	} {
		if _, err := other.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		check(q)
	}
	if searchindex.TextCacheAnswers(cached) == before {
		t.Fatal("the text cache answered none of the searches")
	}
}
