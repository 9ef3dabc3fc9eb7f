package searchindex_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialRanksLikeFTS5 is TestTextCacheRanksLikeFTS5 over a
// partial cache: each owner's partition loaded by its first search,
// ranked with FTS5's store-wide statistics, caught up with writes of
// another connection pool (to partitions and statistics alike), and
// Scope.All legs ranked in SQL.
func TestTextCachePartialRanksLikeFTS5(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "rankings compared query by query, one goroutine")
	ranksLikeFTS5(t, true)
}

// agentsCorpus writes n agents' rows (archival, messages, blocks, each
// agent sharing a block with the next) of one Zipf vocabulary, and
// returns words to search for.
func agentsCorpus(t *testing.T, db execer, n, rows int) []string {
	t.Helper()
	r := rand.New(rand.NewPCG(35, 1))
	vocab := make([]string, 400)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%sx%d", strings.Repeat("q", i%3), i)
	}
	zipf := rand.NewZipf(r, 1.07, 2, uint64(len(vocab)-1))
	text := func() string {
		w := make([]string, 5+r.IntN(25))
		for i := range w {
			w[i] = vocab[zipf.Uint64()]
		}
		return strings.Join(w, " ")
	}
	for a := range n {
		agent := fmt.Sprintf("agent-%d", a)
		for range rows {
			insertArchival(t, db, archivalRow{Agent: agent, Content: text()})
			insertMessage(t, db, agent, "user", text(), baseTime)
		}
		for i := range 3 {
			id := insertBlock(t, db, agent, fmt.Sprintf("block-%d", i), text())
			if i == 0 {
				shareBlock(t, db, id, fmt.Sprintf("agent-%d", (a+1)%n))
			}
		}
	}
	var queries []string
	for i := range 12 {
		queries = append(queries, vocab[i%6]+" "+vocab[20+r.IntN(300)])
	}
	return queries
}

// TestTextCachePartialAgents: a store of many agents far over the bound
// goes partial from a sample (never read whole); each agent's searches
// rank as SQL does from its partition (and, over blocks, those of the
// owners of the blocks shared with it); the partitions stay within the
// bound by evicting the least recently used; an agent whose rows alone
// exceed the bound ranks in SQL; writes by another connection pool reach
// resident partitions and the statistics (moved along for inserts and
// changes to resident rows, read again after other changes).
func TestTextCachePartialAgents(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	// 24 agents with the long tests, 12 otherwise: either is six times
	// the bound, which holds two or three of them.
	agents := testenv.Scale(12, 24)
	var queries []string
	inTx(t, db, func(tx execer) {
		queries = agentsCorpus(t, tx, agents, 40)
		for range 1000 { // one agent too big for the bound alone
			insertArchival(t, tx, archivalRow{Agent: "big", Content: "wx0 wqx1 " + queries[0] + " big agent row"})
		}
	})
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := whole.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	size := searchindex.TextCacheSize(whole)
	whole.Close()
	limit := size / 6
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache: %v, want searchindex.ErrCacheBudget", err)
	}
	if n := searchindex.TextRowsAnalyzed(x); n > 3*256 {
		t.Fatalf("the build analyzed %d rows of a store it cannot hold: want a sample", n)
	}
	if partial, _, _ := searchindex.TextCachePartial(x); !partial || !x.CacheStats().TextPartial {
		t.Fatal("the cache is not partial")
	}
	type shape struct {
		name string
		opts func() *search.Options
	}
	shapes := []shape{
		{"archival", func() *search.Options { return search.NewOptions().ContentTypes(search.Archival) }},
		{"messages", func() *search.Options { return search.NewOptions().ContentTypes(search.Messages).Limit(20) }},
		{"blocks (shared)", func() *search.Options { return search.NewOptions().ContentTypes(search.Blocks).Limit(20) }},
		{"all types", func() *search.Options { return search.NewOptions().Limit(25) }},
	}
	compared := 0
	compare := func(t *testing.T, agent string, scope search.Scope) {
		t.Helper()
		for _, q := range queries[:4] {
			for _, sh := range shapes {
				want, err := sqlx.Search(ctx, q, scope, sh.opts().Mode(search.FTS))
				if err != nil {
					t.Fatal(err)
				}
				got, err := x.Search(ctx, q, scope, sh.opts().Mode(search.FTS))
				if err != nil {
					t.Fatal(err)
				}
				if len(want) != len(got) {
					t.Fatalf("%s %s %q: SQL %d results, cache %d", agent, sh.name, q, len(want), len(got))
				}
				if err := sameRanking(want, got); err != nil {
					t.Fatalf("%s %s %q: %v\nSQL   %v\ncache %v", agent, sh.name, q, err, keys(want), keys(got))
				}
				compared += len(want)
			}
		}
		if _, _, bytes := searchindex.TextCachePartial(x); bytes > limit {
			t.Fatalf("after %s's searches the cache holds %d bytes, bound %d", agent, bytes, limit)
		}
	}
	answers := searchindex.TextCacheAnswers(x)
	for a := range agents {
		agent := fmt.Sprintf("agent-%d", a)
		compare(t, agent, search.Scope{Agent: agent})
		if !searchindex.TextCacheHeld(x, search.Blocks, fmt.Sprintf("agent-%d", (a+agents-1)%agents)) {
			t.Fatalf("%s's block search did not load the partition of the agent sharing a block with it", agent)
		}
	}
	if compared == 0 {
		t.Fatal("no results compared")
	}
	if n := searchindex.TextCacheAnswers(x) - answers; n < int64(agents*4*6) {
		t.Fatalf("the cache answered %d legs of %d: searches fell back to SQL", n, agents*4*6)
	}
	if st := x.CacheStats(); st.TextBytes <= 0 || st.TextBytes > limit {
		t.Fatalf("CacheStats: the text cache holds %d bytes, bound %d", st.TextBytes, limit)
	}
	_, parts, _ := searchindex.TextCachePartial(x)
	if parts >= 3*agents || searchindex.TextCacheHeld(x, search.Archival, "agent-0") {
		t.Fatalf("%d partitions held, agent-0's archival still among them: want the least recently used evicted", parts)
	}
	compare(t, "agent-0 again", search.Scope{Agent: "agent-0"})
	if !searchindex.TextCacheHeld(x, search.Archival, "agent-0") {
		t.Fatal("agent-0's partition did not load again")
	}

	t.Run("owner over the bound", func(t *testing.T) {
		answers := searchindex.TextCacheAnswers(x)
		compare(t, "big", search.Scope{Agent: "big"})
		if searchindex.TextCacheHeld(x, search.Archival, "big") {
			t.Fatal("the cache holds a partition over its bound")
		}
		// The archival legs ran in SQL; messages and blocks (none) and
		// the block leg did not need to.
		if searchindex.TextCacheAnswers(x)-answers >= int64(4*6) {
			t.Fatal("the cache answered the big agent's archival legs")
		}
	})

	t.Run("Scope.All in SQL", func(t *testing.T) {
		answers := searchindex.TextCacheAnswers(x)
		compare(t, "everyone", search.Scope{All: true})
		if searchindex.TextCacheAnswers(x) != answers {
			t.Fatal("a partial cache answered a search over every owner")
		}
	})

	t.Run("other writers", func(t *testing.T) {
		other := openDBAt(t, path)
		compare(t, "agent-5", search.Scope{Agent: "agent-5"}) // resident
		// The first query's words in many more rows of agents not
		// resident and of agent-5: their df moves, so do the scores.
		for a := 10; a < 14; a++ {
			for range 30 {
				insertArchival(t, other, archivalRow{Agent: fmt.Sprintf("agent-%d", a), Content: queries[0] + " " + queries[1]})
			}
		}
		insertArchival(t, other, archivalRow{Agent: "agent-5", Content: queries[0] + " fresh row"})
		if _, err := other.ExecContext(ctx, `DELETE FROM archival WHERE agent = 'agent-5' AND id % 3 = 0`); err != nil {
			t.Fatal(err)
		}
		if _, err := other.ExecContext(ctx, `UPDATE archival SET content = content || ' `+queries[0]+`' WHERE agent = 'agent-5' AND id % 3 = 1`); err != nil {
			t.Fatal(err)
		}
		reads := searchindex.TextStatsReads(x)
		compare(t, "agent-5 after writes", search.Scope{Agent: "agent-5"})
		if n := searchindex.TextStatsReads(x) - reads; n != 0 {
			t.Fatalf("the statistics were read again %d times: inserts and changes to resident rows should move them", n)
		}
		// A change to a row no partition holds: the statistics go, and
		// are read again.
		if _, err := other.ExecContext(ctx, `UPDATE archival SET content = content || ' `+queries[0]+`' WHERE agent = 'big' AND id % 2 = 0`); err != nil {
			t.Fatal(err)
		}
		compare(t, "agent-5 after a change to big", search.Scope{Agent: "agent-5"})
		if searchindex.TextStatsReads(x) == reads {
			t.Fatal("the statistics were not read again after a change they cannot follow")
		}
		rs, err := x.Search(ctx, "fresh", search.Scope{Agent: "agent-5"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival))
		if err != nil || len(rs) != 1 {
			t.Fatalf("the other pool's new row: %d results, %v", len(rs), err)
		}
	})
	t.Logf("%d results compared", compared)
}
