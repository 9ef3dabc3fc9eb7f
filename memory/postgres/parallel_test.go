package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// Two stores (two processes) write archival entries, messages and blocks
// for several agents at once (writers on PostgreSQL run in parallel),
// while a transaction opened before them stays open across all their
// commits and writes rows of its own, committed last; readers search
// all the while, so their caches catch up past the open transaction many
// times. Afterwards every cache holds exactly what caches loaded afresh
// hold, bit for bit (the whole text cache, a partial one ranking with its
// own statistics, the vector cache), and finds the rows SQL finds: no
// row committed late was skipped.
func TestCachesAfterParallelWriters(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	emb := search.NewOffline(16)
	open := func(o memory.Options) *memory.Store {
		t.Helper()
		o.Embedder = emb
		s, err := memory.Open(ctx, dsn, &o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	writers := []*memory.Store{open(memory.Options{TextCacheBytes: -1}), open(memory.Options{TextCacheBytes: -1})}
	whole := open(memory.Options{VectorCacheBytes: 64 << 20})
	partial := open(memory.Options{TextCacheBytes: 24 << 10})
	sqlOnly := open(memory.Options{TextCacheBytes: -1})
	agents := []string{"ann", "bob", "cat", "dan"}
	words := strings.Fields("harbour crane cargo zebra tug pilot wharf tide anchor gull rope ledger")
	text := func(r *rand.Rand) string {
		w := make([]string, 3+r.IntN(6))
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	for _, a := range agents {
		if _, err := writers[0].Agent(a).Archival().Insert(ctx, memory.ArchivalEntry{Content: "harbour crane at dawn"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := storeaccess.Index(whole).WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	if err := storeaccess.Index(whole).WarmVectorCache(ctx); err != nil {
		t.Fatal(err)
	}

	// The transaction that stays open: rows of eve's and fay's, written
	// before and after the others' commits. (Agents the writers leave
	// alone: the store writes one agent's archival one transaction at a
	// time, and a raw insert holds the agent's storage-usage row.)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	long, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer long.Rollback()
	var longIDs []int64
	longInsert := func(agent, content string) {
		t.Helper()
		var id int64
		if err := long.QueryRowContext(ctx, `INSERT INTO archival (agent, content, created_at, valid_from) VALUES ($1, $2, 1, 1) RETURNING id`,
			agent, content).Scan(&id); err != nil {
			t.Fatal(err)
		}
		vecs, err := emb.Embed(ctx, []string{content})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := long.ExecContext(ctx, `INSERT INTO vec_archival (rowid, owner, embedding) VALUES ($1, $2, $3)`, id, agent, blobOf(vecs[0])); err != nil {
			t.Fatal(err)
		}
		if _, err := long.ExecContext(ctx, `INSERT INTO search_vec_log (kind, id) VALUES (2, $1)`, id); err != nil {
			t.Fatal(err)
		}
		longIDs = append(longIDs, id)
	}
	longInsert("eve", "zebra tide long before")

	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w, s := range writers {
		for g := range 3 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := rand.New(rand.NewPCG(uint64(w), uint64(g)))
				for i := range 25 {
					a := agents[r.IntN(len(agents))]
					var err error
					switch i % 5 {
					case 0, 1:
						_, err = s.Agent(a).Archival().Insert(ctx, memory.ArchivalEntry{Content: text(r)})
					case 2:
						_, err = s.Agent(a).Messages().AppendMany(ctx, []memory.Message{{Role: memory.RoleUser, Content: text(r), BatchID: fmt.Sprint("b", g)}})
					case 3:
						var got []memory.ArchivalEntry
						if got, err = s.Agent(a).Archival().List(ctx, nil); err == nil && len(got) > 1 {
							_, err = s.Agent(a).Archival().Supersede(ctx, got[r.IntN(len(got))].ID, memory.ArchivalEntry{Content: text(r)})
							if err != nil && strings.Contains(err.Error(), "not found") {
								err = nil // superseded by the other writer first
							}
						}
					case 4:
						label := fmt.Sprintf("w%d-g%d", w, g)
						if i < 5 {
							_, err = s.Agent(a).CreateBlock(ctx, memory.BlockSpec{Label: label, Value: text(r)})
						}
					}
					if err != nil {
						errs <- fmt.Errorf("writer %d/%d op %d: %w", w, g, i, err)
						return
					}
				}
			}()
		}
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for _, s := range []*memory.Store{whole, partial} {
		readers.Add(1)
		go func() {
			defer readers.Done()
			r := rand.New(rand.NewPCG(7, 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				for _, mode := range []search.Mode{search.FTS, search.Vector} {
					if _, err := s.Agent(agents[r.IntN(len(agents))]).Search(ctx, words[r.IntN(len(words))], search.NewOptions().Mode(mode)); err != nil {
						errs <- err
						return
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	wg.Wait()
	longInsert("fay", "anchor gull long after")
	// The caches caught up with every other commit, past the open
	// transaction.
	for _, s := range []*memory.Store{whole, partial} {
		if _, err := s.Agent("ann").Search(ctx, "zebra", search.NewOptions().Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
	}
	if err := long.Commit(); err != nil {
		t.Fatal(err)
	}
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}

	freshWhole := open(memory.Options{VectorCacheBytes: 64 << 20})
	freshPartial := open(memory.Options{TextCacheBytes: 24 << 10})
	for _, s := range []*memory.Store{freshWhole, freshPartial, partial} {
		if err := storeaccess.Index(s).WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
	}
	if err := storeaccess.Index(freshWhole).WarmVectorCache(ctx); err != nil {
		t.Fatal(err)
	}
	if !storeaccess.Index(partial).CacheStats().TextPartial {
		t.Fatal("the small text cache is not partial: it tests nothing")
	}
	// A pass the writes outran waits out its back-off (a second, doubling)
	// before it runs again: until both types' statistics are there, the
	// partial caches rank in SQL.
	for _, s := range []*memory.Store{partial, freshPartial} {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			before := storeaccess.Index(s).CacheStats().TextLegs
			if _, err := s.Agent("ann").Search(ctx, "harbour", search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival|search.Messages)); err != nil {
				t.Fatal(err)
			}
			if storeaccess.Index(s).CacheStats().TextLegs == before+2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the partial text cache's statistics never came")
			}
			time.Sleep(100 * time.Millisecond)
			if err := storeaccess.Index(s).WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
				t.Fatal(err)
			}
		}
	}
	types := search.Archival | search.Messages
	run := func(s *memory.Store, agent, q string, mode search.Mode) []hit {
		t.Helper()
		rs, err := s.Agent(agent).Search(ctx, q, search.NewOptions().Mode(mode).ContentTypes(types).Limit(500))
		if err != nil {
			t.Fatal(err)
		}
		return hitsOf(rs)
	}
	ids := func(hs []hit) []int64 {
		out := make([]int64, len(hs))
		for i, h := range hs {
			out[i] = h.id
		}
		slices.Sort(out)
		return out
	}
	compared := 0
	for _, a := range agents {
		for _, q := range append(words, "long", "zebra tide") {
			before := storeaccess.Index(whole).CacheStats().TextLegs
			got, want := run(whole, a, q, search.FTS), run(freshWhole, a, q, search.FTS)
			if storeaccess.Index(whole).CacheStats().TextLegs != before+2 {
				t.Fatalf("%s %q: the whole text cache did not answer", a, q)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s %q: whole text cache %v, loaded afresh %v", a, q, got, want)
			}
			if s := ids(run(sqlOnly, a, q, search.FTS)); !slices.Equal(ids(got), s) {
				t.Errorf("%s %q: whole text cache finds %v, SQL %v", a, q, ids(got), s)
			}
			// (Compared when the cache ranked both types' legs: a type
			// whose statistics are not computed yet ranks in SQL.)
			fBefore := storeaccess.Index(freshPartial).CacheStats().TextLegs
			if fp := run(freshPartial, a, q, search.FTS); storeaccess.Index(freshPartial).CacheStats().TextLegs == fBefore+2 && !slices.Equal(fp, want) {
				t.Errorf("%s %q: partial text cache loaded afresh %v, whole %v", a, q, fp, want)
			}
			pBefore := storeaccess.Index(partial).CacheStats().TextLegs
			if pg := run(partial, a, q, search.FTS); storeaccess.Index(partial).CacheStats().TextLegs == pBefore+2 {
				compared++
				if !slices.Equal(pg, want) {
					t.Errorf("%s %q: partial text cache %v, whole %v", a, q, pg, want)
				}
			}
			if got, want := run(whole, a, q, search.Vector), run(freshWhole, a, q, search.Vector); !slices.Equal(got, want) {
				t.Errorf("%s %q: vector cache %v, loaded afresh %v", a, q, got, want)
			}
		}
	}
	if compared == 0 {
		t.Error("the partial text cache ranked no search itself")
	}
	for _, id := range longIDs {
		found := false
		for _, a := range []string{"eve", "fay"} {
			for _, q := range []string{"zebra tide", "anchor gull"} {
				found = found || slices.ContainsFunc(run(whole, a, q, search.FTS), func(h hit) bool { return h.id == id })
			}
		}
		if !found {
			t.Errorf("the long transaction's entry %d is not in the text cache", id)
		}
	}
	t.Logf("%d searches of the partial cache compared", compared)
}
