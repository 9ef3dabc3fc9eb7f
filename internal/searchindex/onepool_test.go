package searchindex_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestCachesOverAPoolOfOne: an in-memory store reads and writes through
// a pool of one connection. A cache's read must not hold that connection
// while it prepares a statement (preparing takes a connection of its
// own): the whole text cache's build, a partition's load and the vector
// cache's all finish, and a search answers.
func TestCachesOverAPoolOfOne(t *testing.T) {
	for _, c := range []struct {
		name string
		opts *searchindex.IndexOptions
		emb  search.Embedder
		mode search.Mode
		prep func(x *searchindex.Index)
		warm func(ctx context.Context, x *searchindex.Index) error
	}{
		{name: "text cache", mode: search.FTS,
			warm: func(ctx context.Context, x *searchindex.Index) error { return x.WarmTextCache(ctx) }},
		{name: "text partition", mode: search.FTS, prep: searchindex.ForceTextPartial,
			warm: func(ctx context.Context, x *searchindex.Index) error {
				if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
					return fmt.Errorf("%w, want the cache partial", err)
				}
				return nil
			}},
		{name: "vector cache", opts: &searchindex.IndexOptions{TextCacheBytes: -1}, emb: search.NewOffline(16), mode: search.Vector,
			warm: func(ctx context.Context, x *searchindex.Index) error { return x.WarmVectorCache(ctx) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			db := openDB(t)
			bulkArchival(t, db, 50)
			db.SetMaxOpenConns(1)
			x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, c.emb, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if c.prep != nil {
				c.prep(x)
			}
			if c.warm != nil {
				if err := c.warm(ctx, x); err != nil {
					t.Fatalf("warm: %v", err)
				}
			}
			opts := search.NewOptions().Mode(c.mode).ContentTypes(search.Archival)
			hits, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, opts)
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			if c.mode == search.FTS && len(hits) == 0 {
				t.Fatal("Search found nothing")
			}
			if st := x.CacheStats(); c.mode == search.FTS && st.TextLegs == 0 {
				t.Fatalf("the text cache ranked no leg: %+v", st)
			}
			// Catch-ups after writes read the new rows by id, through a
			// statement prepared ahead of the catch-up after the first.
			for i := range 3 {
				insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprint("flutter again ", i)})
				if _, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, opts); err != nil {
					t.Fatalf("Search after write %d: %v", i, err)
				}
			}
		})
	}
}

// TestTextByIDPrepareRetried: a catch-up's read by id that could not be
// prepared (the search's context ended meanwhile) is prepared by a later
// catch-up, not read unprepared for the life of the Index.
func TestTextByIDPrepareRetried(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	bulkArchival(t, db, 50)
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	if err := x.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("warm: %v, want the cache partial", err)
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)
	write := func(i int) {
		t.Helper()
		insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprint("flutter again ", i)})
		if _, err := x.Search(ctx, "flutter", search.Scope{Agent: "a"}, opts); err != nil {
			t.Fatal(err)
		}
	}
	write(0)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	searchindex.PrepareTextByID(cctx, x) // the wanted read fails to prepare
	if held, _ := searchindex.TextByIDPrepared(x); held != 0 {
		t.Fatalf("%d reads prepared with a context that ended", held)
	}
	for i := 1; i < 4; i++ {
		write(i)
	}
	if held, none := searchindex.TextByIDPrepared(x); held == 0 {
		t.Fatalf("after 3 more catch-ups: %d reads prepared, %d held as none", held, none)
	}
}

// TestLoadsWaitingForTheBoundOverAPoolOfOne: loads waiting for the
// bound over a pool of one connection, some from stored parts and some
// from rows, all finish: no load waits for the bound holding the
// connection, so one holding a reservation and waiting for the
// connection always gets it.
func TestLoadsWaitingForTheBoundOverAPoolOfOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	db := openDB(t)
	const agents = 4
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for a := range 2 * agents {
		for i := range 300 {
			insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("w-", a), Content: fmt.Sprintf("harbour entry %d crane cargo word%d other%d", i, i%61, a)})
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(5)
	// Agents w-0 to w-3 have stored parts; w-4 to w-7 load from rows.
	first := partialIndex(t, db)
	for a := range agents {
		if _, err := first.Search(ctx, "harbour", search.Scope{Agent: fmt.Sprint("w-", a)}, opts); err != nil {
			t.Fatal(err)
		}
	}
	searchindex.WaitTextPartSaves(first)
	cost := searchindex.TextPartCost(first, search.Archival, "w-0")
	first.Close()
	var size int64
	if err := db.QueryRowContext(ctx, `SELECT max(length(data)) FROM search_text_parts WHERE kind = 2`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	for round := range 5 {
		limit := 3 * size
		if cost > limit {
			limit = cost + size
		}
		x := boundIndex(t, db, limit)
		if _, err := x.Search(ctx, "harbour", search.Scope{Agent: "nobody"}, opts); err != nil { // (the statistics)
			t.Fatal(err)
		}
		t.Logf("part %d B, resident %d B, bound %d B", size, cost, limit)
		release := searchindex.HoldTextReservation(x, limit)
		errs := make(chan error, 2*agents)
		// The stored loads first (their statement run, each waits for the
		// bound), then those from rows (one takes the connection).
		for a := range 2 * agents {
			if a == agents {
				time.Sleep(200 * time.Millisecond)
			}
			go func() {
				_, err := x.Search(ctx, "harbour", search.Scope{Agent: fmt.Sprint("w-", a)}, opts)
				errs <- err
			}()
		}
		time.Sleep(200 * time.Millisecond) // the loads at their wait for the bound
		release()
		for range 2 * agents {
			if err := <-errs; err != nil {
				t.Fatalf("round %d: %v (a load waited for the connection for ever?)", round, err)
			}
		}
		x.Close()
	}
}
