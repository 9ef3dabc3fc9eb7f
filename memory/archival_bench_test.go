package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
)

// BenchmarkInsertArchival inserts one archival entry at a time, reporting
// the median (p50-ns/op) beside the mean: with "session" every entry names
// its conversation (indexed with its neighbours, its predecessor
// re-indexed), with "plain" none does; "plain-quota" is "plain" with a
// per-agent quota (Options.AgentQuotaBytes), read in every insert's
// transaction.
func BenchmarkInsertArchival(b *testing.B) {
	plain := func(i int) map[string]any { return map[string]any{"source": "chat"} }
	for _, bc := range []struct {
		name string
		meta func(i int) map[string]any
		opts *memory.Options
	}{
		{"plain", plain, nil},
		{"session", func(i int) map[string]any { return map[string]any{"source": "chat", "session": fmt.Sprint("s", i/20)} }, nil},
		{"plain-quota", plain, &memory.Options{AgentQuotaBytes: 1 << 40}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			c, err := memory.Open(ctx, fresh(filepath.Join(b.TempDir(), "m.db")), bc.opts)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				start := time.Now()
				if _, err := c.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Metadata: bc.meta(i),
					Content: fmt.Sprintf("note %d: we talked about the garden, the bees and the weather on the hill", i)}); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			b.StopTimer()
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns/op")
		})
	}
}

// BenchmarkInsertArchivalBatch inserts a conversation's session of 20
// entries through one InsertBatch per op (each entry naming its session
// by number, with a date and speaker, as a transcript import writes
// them): ns/op is one session's.
func BenchmarkInsertArchivalBatch(b *testing.B) {
	ctx := context.Background()
	c, err := memory.Open(ctx, fresh(filepath.Join(b.TempDir(), "m.db")), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	ar := c.Agent("a").Archival()
	batch := make([]memory.ArchivalEntry, 20)
	b.ResetTimer()
	for s := range b.N {
		for i := range batch {
			batch[i] = memory.ArchivalEntry{
				Content:  fmt.Sprintf("turn %d of session %d: we talked about the garden, the bees and the weather on the hill", i, s),
				Metadata: map[string]any{"dia_id": fmt.Sprintf("D%d:%d", s, i), "session": s, "speaker": "Caroline", "date": "1:56 pm on 8 May, 2023"},
			}
		}
		if _, err := ar.InsertBatch(ctx, batch, nil); err != nil {
			b.Fatal(err)
		}
	}
}
