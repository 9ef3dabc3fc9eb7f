package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// Searches while rows are written, their sessions changed and deleted:
// no error, no duplicate, pages sorted and no longer than asked.
func TestSessionParityConcurrentWrites(t *testing.T) {
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	words := strings.Fields("river stone bridge lantern harbor meadow orchard falcon willow ember")
	metas := []string{`{"session": 1}`, `{"session": 2}`, `{"conversation": "c"}`, `{}`, `{"thread": 3}`, `{"session":"x","session":"y"}`}
	text := func(r *rand.Rand) string {
		w := make([]string, 2+r.IntN(10))
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	r0 := rand.New(rand.NewPCG(1, 2))
	seq := 0
	write := func(r *rand.Rand, n int) error {
		return b.Write(ctx, func(tx *sql.Tx) error {
			for range n {
				seq++
				agent := []string{"a", "b"}[r.IntN(2)]
				var err error
				switch r.IntN(6) {
				case 0, 1:
					_, err = tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, ?, ?, ?)`,
						agent, text(r), fmt.Sprint("b", r.IntN(9)), seq, int64(seq))
				case 2, 3:
					_, err = tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from) VALUES (?, ?, '', ?, ?, 0)`,
						agent, text(r), metas[r.IntN(len(metas))], int64(seq)*1e9)
				case 4:
					_, err = tx.ExecContext(ctx, `UPDATE archival SET metadata_json = ? WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`, metas[r.IntN(len(metas))])
					if err == nil {
						_, err = tx.ExecContext(ctx, `UPDATE messages SET batch_id = ? WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`, fmt.Sprint("b", r.IntN(9), "x", seq))
					}
				case 5:
					_, err = tx.ExecContext(ctx, `DELETE FROM archival WHERE id = (SELECT id FROM archival ORDER BY random() LIMIT 1)`)
					if err == nil {
						_, err = tx.ExecContext(ctx, `DELETE FROM messages WHERE id = (SELECT id FROM messages ORDER BY random() LIMIT 1)`)
					}
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := write(r0, 600); err != nil {
		t.Fatal(err)
	}
	var xs []*searchindex.Index
	for _, partial := range []bool{false, true} {
		x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: 1 << 30})
		if err != nil {
			t.Fatal(err)
		}
		if partial {
			searchindex.ForceTextPartial(x)
		}
		if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
			t.Fatal(err)
		}
		defer x.Close()
		xs = append(xs, x)
	}
	deadline := time.Now().Add(6 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := rand.New(rand.NewPCG(5, 6))
		for time.Now().Before(deadline) {
			if err := write(r, 5); err != nil {
				errs <- err
				return
			}
		}
	}()
	for g := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(g), 9))
			for time.Now().Before(deadline) {
				x := xs[r.IntN(len(xs))]
				limit := []int{1, 3, 10, 100, 150}[r.IntN(5)]
				scope := search.Scope{Agent: "a"}
				if r.IntN(4) == 0 {
					scope = search.Scope{All: true}
				}
				typ := []search.ContentType{search.Messages, search.Archival}[r.IntN(2)]
				q := words[r.IntN(len(words))]
				rs, err := x.Search(ctx, q, scope, search.NewOptions().Mode(search.FTS).ContentTypes(typ).Limit(limit))
				if err != nil {
					errs <- err
					return
				}
				if len(rs) > limit {
					errs <- fmt.Errorf("%d results for limit %d", len(rs), limit)
					return
				}
				seen := map[int64]bool{}
				for i, res := range rs {
					if seen[res.ID] {
						errs <- fmt.Errorf("duplicate %d", res.ID)
						return
					}
					seen[res.ID] = true
					if i > 0 && res.Source.BM25 < rs[i-1].Source.BM25 {
						errs <- fmt.Errorf("unsorted at %d", i)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
