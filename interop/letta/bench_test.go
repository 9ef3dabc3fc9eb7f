package letta_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/engram-go/engram/interop/letta"
	"github.com/engram-go/engram/memory"
)

// BenchmarkImport imports each real agent file into a new store file (the
// store's opening not timed), and BenchmarkExport writes it back.
func BenchmarkImport(b *testing.B) {
	ctx := context.Background()
	for _, path := range agentFiles(b) {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(path), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				s, err := memory.Open(ctx, filepath.Join(b.TempDir(), "s.db"), nil)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := letta.Import(ctx, s, data, nil); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				s.Close()
				b.StartTimer()
			}
		})
	}
}

func BenchmarkExport(b *testing.B) {
	ctx := context.Background()
	for _, path := range agentFiles(b) {
		data, err := os.ReadFile(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(filepath.Base(path), func(b *testing.B) {
			s, err := memory.Open(ctx, filepath.Join(b.TempDir(), "s.db"), nil)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			rep, err := letta.Import(ctx, s, data, nil)
			if err != nil {
				b.Fatal(err)
			}
			var agents []string
			for _, a := range rep.Agents {
				agents = append(agents, a.Agent)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				f, _, err := letta.Export(ctx, s, agents, nil)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := json.Marshal(f); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// maxRSS is the process's peak resident set in KiB (getrusage).
func maxRSS() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Maxrss
}

// The cost of importing each real file: wall time and the peak resident
// set of the process, logged (go test -v -run TestImportCost).
func TestImportCost(t *testing.T) {
	ctx := context.Background()
	for _, path := range agentFiles(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := openStore(t)
		rep, err := letta.Import(ctx, s, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%-28s %7d bytes  import %8v  peak RSS %d KiB", filepath.Base(path), len(data), rep.Duration, maxRSS())
	}
}
