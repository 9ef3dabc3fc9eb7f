package searchindex_test

import (
	"context"
	"errors"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/search"
)

// SQL, the whole cache and the partial cache rank alike across content
// types (fusion by score), pages, MinScore and hybrid search; fused
// shares stay within 0..1.
func TestSessionParitySweep(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "every option over three indexes")
	ctx := context.Background()
	b := sessionCorpus{seed: 3, rows: 250, batches: 13, blocks: 20, step: 1e9,
		metas: []string{`{"session": 1}`, `{"session": 2}`, `{"conversation": "c"}`, `{}`, `{"thread": 3}`}}.open(t)
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
		q := sessionQuery(i)
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
			if err := sameResults(want, got, 1e-12); err != nil {
				t.Errorf("search %d %q %v %v limit %d: %s vs sql: %v", i, q, mode, ts, limit, name, err)
			}
		}
	}
	t.Logf("%d results compared", n)
}
