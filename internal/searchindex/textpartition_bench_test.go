package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// BenchmarkTextCachePartitionLoad: an agent's first search in a partial
// text cache, which loads that agent's partition, in stores of N agents
// each holding 200 archival entries (ten conversations of 20, so every
// entry has neighbours) and 200 messages. Each op is a different
// agent's first search of one content type; what it costs should be the
// agent's rows, flat in N.
//
//	go test -run '^$' -bench TextCachePartitionLoad -benchtime 100x ./internal/searchindex
func BenchmarkTextCachePartitionLoad(b *testing.B) {
	for _, n := range []int{20, 400} {
		db := partitionStore(b, n)
		for _, c := range []struct {
			name string
			t    search.ContentType
		}{{"archival", search.Archival}, {"messages", search.Messages}} {
			b.Run(fmt.Sprintf("N=%d/%s", n, c.name), func(b *testing.B) {
				ctx := context.Background()
				opts := search.NewOptions().Mode(search.FTS).ContentTypes(c.t).Limit(10)
				var x *searchindex.Index
				defer func() {
					if x != nil {
						x.Close()
					}
				}()
				var cpu time.Duration
				runtime.LockOSThread() // threadCPU: this goroutine's thread
				defer runtime.UnlockOSThread()
				b.ResetTimer()
				for i := range b.N {
					if i%n == 0 { // every agent loaded once: a fresh process
						b.StopTimer()
						if x != nil {
							x.Close()
						}
						var err error
						x, err = searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{VectorCacheBytes: -1})
						if err != nil {
							b.Fatal(err)
						}
						searchindex.ForceTextPartial(x)
						_ = x.WarmTextCache(ctx)
						if _, err := x.Search(ctx, "garden", search.Scope{Agent: partitionAgent(n - 1)}, opts); err != nil {
							b.Fatal(err) // the statistics are read before the timing
						}
						b.StartTimer()
					}
					t0 := threadCPU()
					if _, err := x.Search(ctx, "garden bees", search.Scope{Agent: partitionAgent(i % n)}, opts); err != nil {
						b.Fatal(err)
					}
					cpu += threadCPU() - t0
				}
				b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
				if st := x.CacheStats(); !st.TextPartial {
					b.Fatal("the text cache is not partial")
				}
			})
		}
	}
}

func partitionAgent(i int) string { return "agent-" + strconv.Itoa(i) }

func partitionStore(b *testing.B, n int) *sql.DB {
	b.Helper()
	db := openDB(b)
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	words := strings.Fields("garden bees weather hill river stone bread music paint train letter window coffee market winter summer dog cat")
	r := rand.New(rand.NewPCG(1, 2))
	text := func(k int) string {
		var sb strings.Builder
		for j := range k {
			if j > 0 {
				sb.WriteByte(' ')
			}
			sb.WriteString(words[min(r.IntN(len(words)), r.IntN(len(words)))])
			sb.WriteString(strconv.Itoa(r.IntN(50)))
		}
		return sb.String()
	}
	// Prepared once: an unprepared insert compiles the triggers it fires.
	arch, err := tx.Prepare(`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
		VALUES (?, ?, ?, '[]', '', ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	msg, err := tx.Prepare(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, 'b1', ?, ?)`)
	if err != nil {
		b.Fatal(err)
	}
	at := baseTime.UnixNano()
	for a := range n {
		agent := partitionAgent(a)
		for i := range 200 {
			meta := fmt.Sprintf(`{"source": "chat", "session": "s%d"}`, i/20)
			if _, err := arch.Exec(agent, text(12+r.IntN(30)), meta, at, at); err != nil {
				b.Fatal(err)
			}
		}
		for i := range 200 {
			if _, err := msg.Exec(agent, text(12+r.IntN(30)), i+1, at); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return db
}

// threadCPU is the CPU time of the calling thread
// (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() time.Duration {
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0
	}
	return time.Duration(ts.Nano())
}
