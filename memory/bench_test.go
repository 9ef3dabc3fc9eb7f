package memory_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// BenchmarkAppendToBlock compares a write-through AppendToBlock with a bare
// SQLite INSERT of the same incremental bytes, same file settings (WAL,
// synchronous=NORMAL), in one run: the ratio is the store's overhead.
func BenchmarkAppendToBlock(b *testing.B) {
	ctx := context.Background()
	b.Run("engram", func(b *testing.B) {
		benchAppends(b, openFile(b, filepath.Join(b.TempDir(), "a.db"), nil))
	})
	b.Run("bare-sqlite-insert", func(b *testing.B) {
		c := openFile(b, filepath.Join(b.TempDir(), "probe.db"), nil)
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "log", CharLimit: blocks.MaxCharLimit}); err != nil {
			b.Fatal(err)
		}
		if err := c.Agent("a").Block("log").Append(ctx, "one more line of text\n"); err != nil {
			b.Fatal(err)
		}
		var data []byte
		storeaccess.Backend(c).DB().QueryRow(`SELECT data FROM block_updates ORDER BY seq DESC LIMIT 1`).Scan(&data)
		db, err := sql.Open(sqlitedriver.Name, filepath.Join(b.TempDir(), "bare.db")+"?_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		db.SetMaxOpenConns(1)
		if _, err := db.Exec(`CREATE TABLE u (block_id INTEGER, seq INTEGER, data BLOB, PRIMARY KEY (block_id, seq)) WITHOUT ROWID`); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			if _, err := db.Exec(`INSERT INTO u VALUES (1, ?, ?)`, i, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchAppends times AppendToBlock on c. Blocks stay realistic: a new
// block every 200 appends (4.4 KB, under the default 5,000-character
// limit).
func benchAppends(b *testing.B, c *memory.Store) {
	ctx := context.Background()
	const perBlock = 200
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		label := fmt.Sprintf("log%d", i/perBlock)
		if i%perBlock == 0 {
			b.StopTimer()
			if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: label}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
		}
		i++
		if err := c.Agent("a").Block(label).Append(ctx, "one more line of text\n"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkGetBlockHit: a cached block costs one indexed freshness read.
func BenchmarkGetBlockHit(b *testing.B) {
	ctx := context.Background()
	c := openFile(b, filepath.Join(b.TempDir(), "g.db"), nil)
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "persona", Value: "hello"}); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Agent("a").Block("persona").Doc(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenLoad1000Cold: open a store and load 1,000 blocks' documents.
func BenchmarkOpenLoad1000Cold(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "cold.db")
	c, err := memory.Open(ctx, fresh(path), nil)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 1000; i++ {
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: fmt.Sprintf("b%04d", i), Value: "some content for block"}); err != nil {
			b.Fatal(err)
		}
		if err := c.Agent("a").Block(fmt.Sprintf("b%04d", i)).Append(ctx, " plus an edit"); err != nil {
			b.Fatal(err)
		}
	}
	c.Close()
	b.ResetTimer()
	for b.Loop() {
		c, err := memory.Open(ctx, fresh(path), &memory.Options{CacheSize: 1000})
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < 1000; i++ {
			if _, err := c.Agent("a").Block(fmt.Sprintf("b%04d", i)).Doc(ctx); err != nil {
				b.Fatal(err)
			}
		}
		c.Close()
	}
}

// BenchmarkListBlocks1000: the builder's cold path reads renderings from
// SQL without loading any document.
func BenchmarkListBlocks1000(b *testing.B) {
	ctx := context.Background()
	c := openFile(b, filepath.Join(b.TempDir(), "list.db"), nil)
	for i := 0; i < 1000; i++ {
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: fmt.Sprintf("b%04d", i), Value: "content"}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		l, err := c.Agent("a").Blocks(ctx)
		if err != nil || len(l) != 1000 {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendBySize: one append's cost must not grow with the block
// (the rendering and model are kept current without a whole-text read).
// A fresh block of the size every 100 appends keeps the size what the name
// says, however many appends the benchmark runs (5,000 characters more at
// most).
func BenchmarkAppendBySize(b *testing.B) {
	ctx := context.Background()
	const perBlock = 100
	for _, size := range []int{1_000, 140_000} {
		b.Run(fmt.Sprintf("chars=%d", size), func(b *testing.B) {
			c := openFile(b, filepath.Join(b.TempDir(), "s.db"), nil)
			line := "one more line of the deploy notes, with a reason\n"
			body := strings.Repeat(line, size/len(line)+1)[:size]
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				label := fmt.Sprintf("big%d", i/perBlock)
				if i%perBlock == 0 {
					b.StopTimer()
					if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: label, CharLimit: blocks.MaxCharLimit, Value: body}); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				i++
				if err := c.Agent("a").Block(label).Append(ctx, line); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppendConcurrent: 8 writers, each appending to its own block
// (the bench's "8 durable writers" row); ns/op is per append.
func BenchmarkAppendConcurrent(b *testing.B) {
	ctx := context.Background()
	c := openFile(b, filepath.Join(b.TempDir(), "c.db"), nil)
	var next atomic.Int64
	b.SetParallelism(4) // 8 goroutines on 2 cores
	// The process's CPU time per append beside the wall clock: on a
	// machine others load, the wall clock measures them too.
	var ru0, ru1 syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	b.ResetTimer()
	defer func() {
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
		cpu := time.Duration(ru1.Utime.Nano() + ru1.Stime.Nano() - ru0.Utime.Nano() - ru0.Stime.Nano())
		b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/op")
	}()
	b.RunParallel(func(pb *testing.PB) {
		label := fmt.Sprintf("w%d", next.Add(1))
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: label, CharLimit: blocks.MaxCharLimit}); err != nil {
			b.Error(err)
			return
		}
		for pb.Next() {
			if err := c.Agent("a").Block(label).Append(ctx, "one more line of text\n"); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkAppendTail: one agent's short lines appended to one block, as
// an MCP client's block_append makes them, through the epochs its history
// earns; the tail of the appends' latencies is what a compaction or a new
// epoch adds to the write that finds it due. Each iteration is a run of
// 6,000 appends on a new block.
func BenchmarkAppendTail(b *testing.B) {
	ctx := context.Background()
	c := openFile(b, filepath.Join(b.TempDir(), "s.db"), nil)
	var took []time.Duration
	run := 0
	for b.Loop() {
		label := fmt.Sprintf("log%d", run)
		run++
		blk, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: label, CharLimit: 1 << 20, Value: "log\n"})
		if err != nil {
			b.Fatal(err)
		}
		for i := range 6000 {
			t := time.Now()
			if err := blk.Append(ctx, fmt.Sprintf("\n[v%d]", i)); err != nil {
				b.Fatal(err)
			}
			took = append(took, time.Since(t))
		}
	}
	slices.Sort(took)
	at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) }
	b.ReportMetric(at(0.5), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(at(0.999), "p999-µs")
	b.ReportMetric(at(1), "max-µs")
}
