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

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/migrations"
	"github.com/engram-go/engram/search"
)

// blockRangeAgents own and share the random stores' blocks (names that
// would widen a MATCH if they reached one).
var blockRangeAgents = []string{"ann", `a" OR "b`, "*", "bob smith", "日本語", "zed"}

// blockRangeHistory writes n random block operations: new blocks, text
// edits (marked dirty, indexed before the next search), owner changes,
// shares (some with the block's own owner), unshares and deletes.
func blockRangeHistory(t *testing.T, db *sql.DB, rng *rand.Rand, n int) {
	t.Helper()
	ctx := context.Background()
	text := func() string {
		// Mostly filler, so that the queried words are rare enough for
		// their idf (and the scores) to tell rows apart.
		w := make([]string, 1+rng.Intn(12))
		for i := range w {
			w[i] = fmt.Sprintf("filler%d", rng.Intn(40))
			if rng.Intn(5) == 0 {
				w[i] = ownerRangeVocab[rng.Intn(len(ownerRangeVocab))]
			}
		}
		return strings.Join(w, " ")
	}
	agent := func() string { return blockRangeAgents[rng.Intn(len(blockRangeAgents))] }
	const pick = `(SELECT id FROM blocks ORDER BY random() LIMIT 1)`
	for i := range n {
		var stmt string
		var args []any
		switch op := rng.Intn(10); {
		case op < 3:
			stmt = `INSERT OR IGNORE INTO blocks (owner, label, description, block_type, permission, schema_json, char_limit, rendered, created_at, updated_at)
				VALUES (?, ?, ?, 'working', 'ReadWrite', '{}', 5000, ?, 0, 0)`
			args = []any{agent(), fmt.Sprintf("%s %d", ownerRangeVocab[rng.Intn(len(ownerRangeVocab))], i), text(), text()}
		case op < 5:
			stmt, args = `UPDATE blocks SET rendered = ? WHERE id = `+pick, []any{text()}
		case op < 6:
			stmt, args = `UPDATE OR IGNORE blocks SET owner = ? WHERE id = `+pick, []any{agent()}
		case op < 8:
			stmt, args = `INSERT OR IGNORE INTO shares (block_id, agent, permission, created_at) SELECT `+pick+`, ?, 'ReadOnly', 0`, []any{agent()}
		case op < 9:
			stmt = `DELETE FROM shares WHERE (block_id, agent) IN (SELECT block_id, agent FROM shares ORDER BY random() LIMIT 1)`
		default:
			stmt = `DELETE FROM blocks WHERE id = ` + pick
		}
		if _, err := db.ExecContext(ctx, stmt, args...); err != nil {
			t.Fatalf("%s %v: %v", stmt, args, err)
		}
	}
}

// blockRangeRanking is every agent's ranking of each vocabulary word and
// of a two-word query, as id:score lines, by the query every search over
// blocks ran before fts_blocks was keyed by owner (migration 0021): each
// match in the store ranked, then the agent's own and shared blocks kept.
// index is an FTS5 table keyed by block id.
func blockRangeRanking(t *testing.T, db *sql.DB, index string) []string {
	t.Helper()
	var out []string
	for _, agent := range blockRangeAgents {
		for _, q := range append(slices.Clone(ownerRangeVocab), "cache comet") {
			expr, err := search.MatchExpression(q)
			if err != nil {
				t.Fatal(err)
			}
			rows, err := db.Query(fmt.Sprintf(`SELECT b.id, bm25(%[1]s, 5.0, 2.0, 1.0) AS s
				FROM %[1]s JOIN blocks b ON b.id = %[1]s.rowid
				WHERE %[1]s MATCH ? AND (b.owner = ? OR EXISTS (SELECT 1 FROM shares sh WHERE sh.block_id = b.id AND sh.agent = ?))
				ORDER BY s, b.id LIMIT 6`, index), expr, agent, agent)
			if err != nil {
				t.Fatal(err)
			}
			var line []string
			for rows.Next() {
				var id int64
				var s float64
				if err := rows.Scan(&id, &s); err != nil {
					t.Fatal(err)
				}
				line = append(line, fmt.Sprintf("%d:%v", id, s))
			}
			rows.Close()
			out = append(out, fmt.Sprintf("%s %q: %s", agent, q, strings.Join(line, " ")))
		}
	}
	return out
}

// searchRanking is blockRangeRanking's lines from the search index (full
// text in SQL).
func searchRanking(t *testing.T, x *searchindex.Index) []string {
	t.Helper()
	var out []string
	for _, agent := range blockRangeAgents {
		for _, q := range append(slices.Clone(ownerRangeVocab), "cache comet") {
			rs, err := x.Search(context.Background(), q, search.Scope{Agent: agent},
				search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks).Limit(6))

			if err != nil {
				t.Fatal(err)
			}
			var line []string
			for _, r := range rs {
				line = append(line, fmt.Sprintf("%d:%v", r.ID, r.Source.BM25))
			}
			out = append(out, fmt.Sprintf("%s %q: %s", agent, q, strings.Join(line, " ")))
		}
	}
	return out
}

// The blocks leg reaches one agent's own blocks and those shared with it
// before ranking (migration 0021), and ranks them as before: the same
// ids in the same order with bit-identical bm25 scores. A store written
// at version 20 ranks the same after the migration as the version-20
// query did; after more writes at version 21 (owner changes, shares and
// unshares, edits, deletes) the live index ranks as a fresh index of the
// blocks keyed by id, and passes FTS5's integrity-check.
func TestFullTextBlocksOwnerRangeSameRanking(t *testing.T) {
	ctx := context.Background()
	all, err := migrations.SQLite()
	if err != nil {
		t.Fatal(err)
	}
	for seed := int64(1); seed <= 5; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			path := filepath.Join(t.TempDir(), "b.db")
			db, err := sql.Open(Driver, path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for v := 0; v < 20; {
				if v, err = applyNext(ctx, conn, all); err != nil {
					t.Fatal(err)
				}
			}
			conn.Close()
			blockRangeHistory(t, db, rng, 150)
			// What version 20's lazy index did before a search.
			for _, s := range []string{
				`INSERT INTO fts_blocks (fts_blocks, rowid, label, description, rendered)
				 SELECT 'delete', i.id, i.label, i.description, i.rendered FROM fts_blocks_indexed i JOIN fts_blocks_dirty d ON d.id = i.id`,
				`INSERT INTO fts_blocks (rowid, label, description, rendered)
				 SELECT b.id, b.label, b.description, b.rendered FROM blocks b JOIN fts_blocks_dirty d ON d.id = b.id`,
				`INSERT OR REPLACE INTO fts_blocks_indexed (id, label, description, rendered)
				 SELECT b.id, b.label, b.description, b.rendered FROM blocks b JOIN fts_blocks_dirty d ON d.id = b.id`,
				`DELETE FROM fts_blocks_dirty`,
			} {
				if _, err := db.ExecContext(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			before := blockRangeRanking(t, db, "fts_blocks")
			if _, _, err := Migrate(ctx, db); err != nil {
				t.Fatal(err)
			}
			x, err := searchindex.NewIndex(ctx, db, SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if got := searchRanking(t, x); !slices.Equal(got, before) {
				t.Fatalf("after migration 0021:\n%s", diffLines(strings.Join(before, "\n"), strings.Join(got, "\n")))
			}
			found := 0
			for _, l := range before {
				found += strings.Count(l, ":") - 1
			}
			if found < 50 {
				t.Fatalf("only %d hits compared", found)
			}

			blockRangeHistory(t, db, rng, 300)
			got := searchRanking(t, x) // indexes the dirty blocks first
			if _, err := db.ExecContext(ctx, `CREATE VIRTUAL TABLE fts_ref USING fts5(label, description, rendered,
				content = 'blocks', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2')`); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO fts_ref (fts_ref) VALUES ('rebuild')`); err != nil {
				t.Fatal(err)
			}
			if want := blockRangeRanking(t, db, "fts_ref"); !slices.Equal(got, want) {
				t.Fatalf("after writes at version 21:\n%s", diffLines(strings.Join(want, "\n"), strings.Join(got, "\n")))
			}
			if _, err := db.ExecContext(ctx, `INSERT INTO fts_blocks (fts_blocks) VALUES ('integrity-check')`); err != nil {
				t.Errorf("fts_blocks integrity-check: %v", err)
			}
			var stray int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM fts_blocks f WHERE NOT EXISTS (
				SELECT 1 FROM blocks b JOIN fts_owners o ON o.name = b.owner WHERE o.no * 1099511627776 + b.id = f.rowid)`).Scan(&stray); err != nil {
				t.Fatal(err)
			}
			if stray != 0 {
				t.Errorf("%d fts_blocks rows are not at their block's owner's rowid", stray)
			}
		})
	}
}
