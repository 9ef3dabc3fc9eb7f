package letta_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/engram-go/engram/interop/letta"
)

// bigDoc is a synthetic agent file of about size bytes: one agent whose
// conversation (shape "messages") or source files (shape "files") hold it.
func bigDoc(shape string, size int) map[string]any {
	doc := minimalDoc()
	a := firstAgent(doc)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog. ", 11) // ~500 bytes
	switch shape {
	case "messages":
		var msgs []any
		for i := 0; i*len(text) < size; i++ {
			role := "user"
			if i%2 == 1 {
				role = "assistant"
			}
			msgs = append(msgs, map[string]any{"id": fmt.Sprintf("message-%d", i), "role": role,
				"content": []any{map[string]any{"type": "text", "text": text}}, "created_at": "2025-01-01T00:00:00Z"})
		}
		a["messages"] = msgs
	case "files":
		a["source_ids"] = []any{"source-0"}
		doc["sources"] = []any{map[string]any{"id": "source-0", "name": "docs"}}
		var files []any
		per := 1 << 20
		for i := 0; i*per < size; i++ {
			files = append(files, map[string]any{"id": fmt.Sprintf("file-%d", i), "source_id": "source-0",
				"file_name": fmt.Sprintf("f%d.txt", i), "content": strings.Repeat(text, per/len(text))})
		}
		doc["files"] = files
	}
	return doc
}

// The cost of importing a 50 MB agent file: wall time, CPU and the peak
// resident set of the process. An import should cost a small multiple of
// the file (peak RSS under 10x its size). Runs with ENGRAM_LETTA_BIG=1.
func TestImportCostLargeFile(t *testing.T) {
	if os.Getenv("ENGRAM_LETTA_BIG") == "" {
		t.Skip("set ENGRAM_LETTA_BIG=1 (imports 50 MB agent files)")
	}
	for _, shape := range []string{"messages", "files"} {
		t.Run(shape, func(t *testing.T) {
			data := marshal(t, bigDoc(shape, 50<<20))
			runtime.GC()
			before := maxRSS()
			var r0, r1 syscall.Rusage
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r0)
			start := time.Now()
			s := openStore(t)
			_, err := letta.Import(context.Background(), s, data, nil)
			_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r1)
			cpu := time.Duration(r1.Utime.Nano() + r1.Stime.Nano() - r0.Utime.Nano() - r0.Stime.Nano())
			peak := maxRSS()
			t.Logf("%s: %d bytes, import err=%v, wall %v, CPU %v, peak RSS %d MiB (before %d MiB)",
				shape, len(data), err, time.Since(start), cpu, peak>>10, before>>10)
			if err != nil {
				t.Fatal(err)
			}
			if peak<<10 > 10*int64(len(data)) {
				t.Errorf("peak RSS %d MiB for a %d MiB file: over 10x", peak>>10, len(data)>>20)
			}
		})
	}
}

// The part of a large import's cost spent mapping (ToDump) rather than
// storing. Runs with ENGRAM_LETTA_BIG=1.
func TestMapCostLargeFile(t *testing.T) {
	if os.Getenv("ENGRAM_LETTA_BIG") == "" {
		t.Skip("set ENGRAM_LETTA_BIG=1")
	}
	data := marshal(t, bigDoc("messages", 10<<20))
	start := time.Now()
	f, err := letta.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	parsed := time.Since(start)
	d, _, err := letta.ToDump(f, nil)
	if err != nil {
		t.Fatal(err)
	}
	mapped := time.Since(start)
	s := openStore(t)
	if _, err := s.Import(context.Background(), d); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes, %d messages: parse %v, map %v, store %v", len(data), len(d.Messages), parsed, mapped-parsed, time.Since(start)-mapped)
}
