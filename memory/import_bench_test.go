package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
)

// BenchmarkImportDump imports a dump of one agent's 2,000 messages (in
// batches of 20) and 500 archival entries, tagged, some superseded, into
// a fresh store.
func BenchmarkImportDump(b *testing.B) {
	ctx := context.Background()
	src, err := memory.Open(ctx, fresh(filepath.Join(b.TempDir(), "src.db")), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer src.Close()
	a := src.Agent("a")
	for i := range 2000 {
		if _, err := a.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: fmt.Sprint("s", i/20),
			Content: fmt.Sprintf("turn %d: we talked about the garden, the bees and the weather on the hill", i)}); err != nil {
			b.Fatal(err)
		}
	}
	for i := range 500 {
		e, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprintf("note %d on the harbour and the tide", i), Tags: []string{"notes", fmt.Sprint("t", i%7)}})
		if err != nil {
			b.Fatal(err)
		}
		if i%5 == 0 {
			if _, err := a.Archival().Supersede(ctx, e.ID, memory.ArchivalEntry{Content: fmt.Sprintf("note %d, corrected", i)}); err != nil {
				b.Fatal(err)
			}
		}
	}
	d, err := src.Export(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		dst, err := memory.Open(ctx, fresh(filepath.Join(b.TempDir(), fmt.Sprint("dst", i, ".db"))), nil)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := dst.Import(ctx, d); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		dst.Close()
		b.StartTimer()
	}
}
