package searchindex_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// BenchmarkTextCacheOwnerLoad: the first search of an agent holding N
// archival entries (conversations of 50 under the accepted keys, a
// quarter superseded, some merged places, a tenth naming none), which
// loads its partition: "own" finds the neighbours among the owner's
// entries in Go, "links" reads them per entry from archival_links. What
// one load costs should grow as N does.
//
//	go test -run '^$' -bench TextCacheOwnerLoad -benchtime 5x ./internal/searchindex
func BenchmarkTextCacheOwnerLoad(b *testing.B) {
	for _, n := range []int{1000, 4000, 16000} {
		db := openDB(b)
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		ins, err := tx.Prepare(`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
			VALUES (?, ?, ?, '[]', '', 0, 0)`)
		if err != nil {
			b.Fatal(err)
		}
		words := strings.Fields("garden bees weather hill river stone bread music paint train letter window coffee market winter summer dog cat")
		keys := []string{"conversation", "conversation_id", "session", "session_id", "thread", "thread_id"}
		for i := range n {
			var w []string
			for j := range 12 + i%30 {
				w = append(w, fmt.Sprint(words[(i*7+j*3)%len(words)], (i+j)%50))
			}
			meta := fmt.Sprintf(`{"%s": "c%d", "source": "chat"}`, keys[i%len(keys)], (i/50)%(n/50))
			if i%10 == 9 {
				meta = `{"source": "chat"}`
			}
			if _, err := ins.Exec("big", strings.Join(w, " "), meta); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := ins.Exec("small", "garden bees", `{"session": "s"}`); err != nil {
			b.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
		for _, q := range []string{`UPDATE archival SET valid_to = 1 WHERE id % 4 = 0`, `UPDATE archival SET conversation_pos = id - 30 WHERE id % 17 = 0`} {
			if _, err := db.Exec(q); err != nil {
				b.Fatal(err)
			}
		}
		for _, how := range []string{"own", "links"} {
			b.Run(fmt.Sprintf("N=%d/%s", n, how), func(b *testing.B) {
				ctx := context.Background()
				opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(10)
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				var cpu time.Duration
				b.ReportAllocs()
				b.ResetTimer()
				for range b.N {
					b.StopTimer()
					x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{VectorCacheBytes: -1})
					if err != nil {
						b.Fatal(err)
					}
					searchindex.ForceTextPartial(x)
					if how == "links" {
						searchindex.ReadArchivalThroughLinks(x)
					}
					_ = x.WarmTextCache(ctx)
					if _, err := x.Search(ctx, "garden", search.Scope{Agent: "small"}, opts); err != nil {
						b.Fatal(err)
					}
					runtime.GC()
					b.StartTimer()
					t0 := threadCPU()
					if _, err := x.Search(ctx, "garden bees", search.Scope{Agent: "big"}, opts); err != nil {
						b.Fatal(err)
					}
					cpu += threadCPU() - t0
					b.StopTimer()
					if st := x.CacheStats(); !st.TextPartial {
						b.Fatal("the text cache is not partial")
					}
					x.Close()
					b.StartTimer()
				}
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
			})
		}
	}
}
