package searchindex_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// countingDialect is SQLite's dialect counting the document frequencies
// read one term at a time.
type countingDialect struct {
	sqlite.SearchDialect
	dfReads *atomic.Int64
}

func (d countingDialect) TextDocFreq(ctx context.Context, q driver.Execer, index, term string) (int64, error) {
	d.dfReads.Add(1)
	return d.SearchDialect.TextDocFreq(ctx, q, index, term)
}

// TestTextCachePartialReadsVocabularyOnce: a partial text cache over
// SQLite reads each content type's complete statistics once (FTS5's
// vocabulary) and ranks every agent's first search from them: no query
// term's document frequency is read from FTS5, however many agents
// search and whatever their terms, and every answer ranks as the SQL
// leg's does, score for score; after an insert the cache follows (the
// statistics move on), still reading none.
func TestTextCachePartialReadsVocabularyOnce(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow", "boundary", "vortex"}
	for a := range 12 {
		for i := range 15 {
			agent := fmt.Sprint("agent-", a)
			insertArchival(t, db, archivalRow{Agent: agent, Content: words[(a+i)%8] + " " + words[(i*3)%8] + " note " + words[(a*i)%8]})
			insertMessage(t, db, agent, "user", words[(a*i)%8]+" "+words[i%5], baseTime)
		}
	}
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	var dfReads atomic.Int64
	x, err := searchindex.NewIndex(ctx, db, countingDialect{dfReads: &dfReads}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 20, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	check := func(round int) {
		t.Helper()
		answers := searchindex.TextCacheAnswers(x)
		legs := 0
		for a := range 12 {
			scope := search.Scope{Agent: fmt.Sprint("agent-", a)}
			q := words[(a+round)%8] + " " + words[(a*5+round)%8]
			for _, ct := range []search.ContentType{search.Archival, search.Messages} {
				opts := func() *search.Options { return search.NewOptions().Mode(search.FTS).ContentTypes(ct).Limit(10) }
				want, err := sqlx.Search(ctx, q, scope, opts())
				if err != nil {
					t.Fatal(err)
				}
				got, err := x.Search(ctx, q, scope, opts())
				if err != nil {
					t.Fatal(err)
				}
				if err := sameRanking(want, got); err != nil {
					t.Fatalf("round %d, %s, %v %q: %v\nSQL   %v\ncache %v", round, scope.Agent, ct, q, err, keys(want), keys(got))
				}
				legs++
			}
		}
		if n := searchindex.TextCacheAnswers(x) - answers; n != int64(legs) {
			t.Fatalf("round %d: the cache answered %d of %d legs: it is not what is measured", round, n, legs)
		}
	}
	check(0)
	if n := dfReads.Load(); n != 0 {
		t.Errorf("12 agents' first searches read %d document frequencies one term at a time; want none", n)
	}
	insertArchival(t, db, archivalRow{Agent: "agent-3", Content: "vortex vortex shock"})
	check(1)
	if n := dfReads.Load(); n != 0 {
		t.Errorf("after an insert the searches read %d document frequencies one term at a time; want none", n)
	}
}
