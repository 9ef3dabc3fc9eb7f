package searchindex_test

import (
	"context"
	"database/sql"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// editWords are the words the message edit tests write, and search for.
var editWords = strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon`)

// editSeqs are the seqs the random edit tests write at: both ends of
// int64, where a step of one or two overflows, and the middle.
var editSeqs = []int64{math.MinInt64, math.MinInt64 + 1, math.MinInt64 + 2, math.MinInt64 + 3,
	-1, 0, 1, 2, 3, 4, 5, 6, 7,
	math.MaxInt64 - 3, math.MaxInt64 - 2, math.MaxInt64 - 1, math.MaxInt64}

// editRun is a random edit test's seed and number of steps:
// ENGRAM_EDITS_SEED and ENGRAM_EDITS_STEPS, else 1 and steps.
func editRun(t *testing.T, steps int) (uint64, int) {
	t.Helper()
	seed := uint64(1)
	if s := os.Getenv("ENGRAM_EDITS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("ENGRAM_EDITS_SEED: %v", err)
		}
	}
	if s := os.Getenv("ENGRAM_EDITS_STEPS"); s != "" {
		var err error
		if steps, err = strconv.Atoi(s); err != nil {
			t.Fatalf("ENGRAM_EDITS_STEPS: %v", err)
		}
	}
	return seed, steps
}

// editText is one to four of editWords.
func editText(r *rand.Rand) string {
	w := make([]string, 1+r.IntN(4))
	for i := range w {
		w[i] = editWords[r.IntN(len(editWords))]
	}
	return strings.Join(w, " ")
}

// sqliteEdits is a SQLite store edited by hand through other (its own
// pool), with three indexes over db: one ranking in SQL, a whole text
// cache and a forced partial one, all following the edits.
type sqliteEdits struct {
	db, other            *sql.DB
	sqlx, whole, partial *searchindex.Index
}

// newSQLiteEdits opens a store in a new file; seed writes its first
// messages through other before the indexes are made.
func newSQLiteEdits(t *testing.T, seed func(other *sql.DB)) *sqliteEdits {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	e := &sqliteEdits{db: openDBAt(t, path), other: openDBAt(t, path)}
	seed(e.other)
	index := func(o *searchindex.IndexOptions) *searchindex.Index {
		x, err := searchindex.NewIndex(ctx, e.db, sqlite.SearchDialect{}, nil, o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		return x
	}
	e.sqlx = index(&searchindex.IndexOptions{TextCacheBytes: -1})
	e.whole = index(nil)
	if err := e.whole.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	e.partial = index(&searchindex.IndexOptions{TextCacheBytes: 1 << 20, VectorCacheBytes: -1})
	searchindex.ForceTextPartial(e.partial)
	_ = e.partial.WarmTextCache(ctx)
	return e
}

// check fails t unless, after step: fts_messages holds what
// fts_messages_source gives, once per row; the whole cache ranks every
// query as SQL for every agent and the partial one for the first agent
// (resident there), scores included; the partial cache's statistics
// equal a fresh count. history is what to print on failure. It reports
// whether the statistics were compared (they were ready).
func (e *sqliteEdits) check(t *testing.T, step string, agents, queries []string, history func() string) bool {
	t.Helper()
	ctx := context.Background()
	if extra, missing := ftsMessagesDrift(t, e.db); len(extra)+len(missing) > 0 {
		slices.Sort(extra)
		slices.Sort(missing)
		t.Fatalf("after %s: fts_messages holds %d entries the view does not (%v), lacks %d (%v)\n%s",
			step, len(extra), extra[:min(8, len(extra))], len(missing), missing[:min(8, len(missing))], history())
	}
	var rows, want int
	if err := e.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM fts_messages), (SELECT count(*) FROM fts_messages_source)`).Scan(&rows, &want); err != nil {
		t.Fatal(err)
	}
	if rows != want {
		t.Fatalf("after %s: fts_messages has %d rows, fts_messages_source %d\n%s", step, rows, want, history())
	}
	opts := func() *search.Options {
		return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(100)
	}
	for i, agent := range agents {
		for _, q := range queries {
			want, err := e.sqlx.Search(ctx, q, search.Scope{Agent: agent}, opts())
			if err != nil {
				t.Fatal(err)
			}
			for _, y := range []struct {
				name string
				x    *searchindex.Index
			}{{"whole", e.whole}, {"partial", e.partial}} {
				if y.x == e.partial && i > 0 {
					continue // the other agents stay foreign to the partial cache
				}
				got, err := y.x.Search(ctx, q, search.Scope{Agent: agent}, opts())
				if err != nil {
					t.Fatal(err)
				}
				if len(want) != len(got) {
					t.Fatalf("after %s, %s %s %q: SQL %d results, cache %d\nSQL   %v\ncache %v\n%s", step, y.name, agent, q, len(want), len(got), keys(want), keys(got), history())
				}
				if err := sameRanking(want, got); err != nil {
					t.Fatalf("after %s, %s %s %q: %v\nSQL   %v\ncache %v\n%s", step, y.name, agent, q, err, keys(want), keys(got), history())
				}
			}
		}
	}
	ready, err := searchindex.TextStatsDiff(ctx, e.partial, e.whole, search.Messages)
	if err != nil {
		t.Fatalf("after %s: statistics: %v\n%s", step, err, history())
	}
	return ready
}
