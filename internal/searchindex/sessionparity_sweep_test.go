package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// SQL, the whole cache and the partial cache rank alike across content
// types (fusion by score), pages, MinScore and hybrid search; fused
// shares stay within 0..1.
func TestSessionParitySweep(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "every option over three indexes")
	ctx := context.Background()
	b, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "s.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	r := rand.New(rand.NewPCG(3, 4))
	words := strings.Fields("river stone bridge lantern harbor meadow orchard falcon willow ember quarry thistle cobalt")
	text := func() string {
		w := make([]string, 2+r.IntN(14))
		for i := range w {
			w[i] = words[r.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	metas := []string{`{"session": 1}`, `{"session": 2}`, `{"conversation": "c"}`, `{}`, `{"thread": 3}`}
	err = b.Write(ctx, func(tx *sql.Tx) error {
		for _, agent := range []string{"a", "b"} {
			for i := range 250 {
				if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
					VALUES (?, 'user', ?, ?, ?, ?)`, agent, text(), fmt.Sprintf("b%d", i%13), i, int64(i)); err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO archival (agent, content, tags_text, metadata_json, created_at, valid_from)
					VALUES (?, ?, '', ?, ?, 0)`, agent, text(), metas[i%len(metas)], int64(i)*1e9); err != nil {
					return err
				}
			}
			for i := range 20 {
				insertBlock(t, tx, agent, fmt.Sprint("l", i), text())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	emb := search.NewOffline(64)
	open := func(mode string) *searchindex.Index {
		bytes := int64(1 << 30)
		if mode == "sql" {
			bytes = -1
		}
		x, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), emb, &searchindex.IndexOptions{Write: b.Write, TextCacheBytes: bytes, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		if mode == "partial" {
			searchindex.ForceTextPartial(x)
		}
		if mode != "sql" {
			if err := x.WarmTextCache(ctx); err != nil && !errors.Is(err, searchindex.ErrCacheBudget) {
				t.Fatal(err)
			}
		}
		t.Cleanup(func() { x.Close() })
		return x
	}
	xs := map[string]*searchindex.Index{"sql": open("sql"), "whole": open("whole"), "partial": open("partial")}
	types := []search.ContentType{search.Messages, search.Archival, search.Blocks}
	n := 0
	for i := range 60 {
		q := words[i%len(words)]
		if i%3 == 1 {
			q += " " + words[(i*5)%len(words)]
		}
		limit := []int{1, 3, 10, 37, 150, 200}[i%6]
		mode := []search.Mode{search.FTS, search.Hybrid}[i%2]
		ts := [][]search.ContentType{types, types[:2], {search.Messages, search.Blocks}, {search.Archival}}[(i/2)%4]
		o := func() *search.Options {
			o := search.NewOptions().Mode(mode).ContentTypes(ts...).Limit(limit)
			if i%5 == 4 && mode == search.FTS {
				o = o.MinScore(0.3)
			}
			return o
		}
		var want []search.Result
		for _, name := range []string{"sql", "whole", "partial"} {
			got, err := xs[name].Search(ctx, q, search.Scope{Agent: "a"}, o())
			if err != nil {
				t.Fatalf("%s %q: %v", name, q, err)
			}
			for _, r := range got {
				if len(ts) > 1 && mode == search.FTS && (r.Source.FTSNorm < 0 || r.Source.FTSNorm > 1) {
					t.Errorf("%s %q: FTSNorm %v", name, q, r.Source.FTSNorm)
				}
			}
			if name == "sql" {
				want = got
				if len(got) < min(limit, 20) && i%5 != 4 {
					t.Errorf("%q %v limit %d: %d results", q, mode, limit, len(got))
				}
				n += len(got)
				continue
			}
			if err := sameNearly(want, got); err != nil {
				t.Errorf("search %d %q %v %v limit %d: %s vs sql: %v", i, q, mode, ts, limit, name, err)
			}
		}
	}
	t.Logf("%d results compared", n)
}

// sameNearly: same results in the same order, scores within 1e-12
// (FTS5's log() and Go's differ in the last bit, before this change too).
func sameNearly(want, got []search.Result) error {
	if len(want) != len(got) {
		return fmt.Errorf("%d results, want %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if key(w) != key(g) {
			return fmt.Errorf("result %d: %s, want %s", i, key(g), key(w))
		}
		if math.Abs(w.Score-g.Score) > 1e-12*math.Abs(w.Score) || math.Abs(w.Source.BM25-g.Source.BM25) > 1e-12*math.Abs(w.Source.BM25) {
			return fmt.Errorf("result %d (%s): score %.17g bm25 %.17g, want %.17g %.17g", i, key(w), g.Score, g.Source.BM25, w.Score, w.Source.BM25)
		}
	}
	return nil
}
