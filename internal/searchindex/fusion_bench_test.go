package searchindex_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/eval"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// BenchmarkFusionAcrossTypes: FTS over archival entries and messages
// (Cranfield's abstracts split between them, messages in batches of ten),
// limit 10: legs in SQL fused by score (FullTextMax's statistics queries
// included) or by rank (a dialect without driver.FullTextScale, as before), and
// over the text cache (scale from its statistics).
func BenchmarkFusionAcrossTypes(b *testing.B) {
	dir := eval.FindCranfield()
	if dir == "" {
		b.Skip("Cranfield not found")
	}
	c, err := eval.LoadCranfield(dir)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	db := openDB(b)
	for i, d := range c.Docs {
		text := d.Title + "\n" + d.Body
		if i%2 == 0 {
			insertArchival(b, db, archivalRow{Agent: "a", Content: text})
		} else if _, err := db.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			VALUES ('a', 'user', ?, ?, ?, ?)`, text, fmt.Sprintf("b%d", i/20), i%20, time.Now().UnixNano()); err != nil {
			b.Fatal(err)
		}
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival, search.Messages).Limit(10)
	for _, tc := range []struct {
		name string
		d    driver.Dialect
		io   searchindex.IndexOptions
	}{
		{"sql/score", sqlite.SearchDialect{}, searchindex.IndexOptions{TextCacheBytes: -1}},
		{"sql/rank", plainDialect{sqlite.SearchDialect{}}, searchindex.IndexOptions{TextCacheBytes: -1}},
		{"cache/score", sqlite.SearchDialect{}, searchindex.IndexOptions{}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			x, err := searchindex.NewIndex(ctx, db, tc.d, nil, &tc.io)
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			if tc.io.TextCacheBytes >= 0 {
				if err := x.WarmTextCache(ctx); err != nil {
					b.Fatal(err)
				}
			}
			lat := make(latencies, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start := time.Now()
				if _, err := x.Search(ctx, c.Queries[i%len(c.Queries)].Text, search.Scope{Agent: "a"}, opts); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			b.StopTimer()
			lat.report(b)
		})
	}
}
