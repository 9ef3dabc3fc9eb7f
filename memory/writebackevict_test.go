package memory_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// A write-back store with a one-document cache, whose blocks are evicted
// (and so flushed) between appends while another store on the same
// database appends to them too and rebases them, loses no acknowledged
// append.
func TestWriteBackEvictionAndRebaseLoseNothing(t *testing.T) {
	writeBackEvictRebase(t, filepath.Join(t.TempDir(), "wb.db"))
}

func TestWriteBackEvictionAndRebaseLoseNothingPostgres(t *testing.T) {
	writeBackEvictRebase(t, pgtest.Start(t).NewDatabase(t))
}

func writeBackEvictRebase(t *testing.T, path string) {
	ctx := context.Background()
	a, err := memory.Open(ctx, path, &memory.Options{WriteBack: true, CacheSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	b := openFile(t, path, nil)
	labels := []string{"x", "y", "z"}
	for _, l := range labels {
		if _, err := b.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: l, CharLimit: 100000}); err != nil {
			t.Fatal(err)
		}
	}
	acked := map[string][]string{}
	for i := range 60 {
		l := labels[i%3]
		s := a
		if i%5 == 0 {
			s = b
		}
		line := fmt.Sprintf("%s-%d\n", l, i)
		if err := s.Agent("a").Block(l).Append(ctx, line); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		acked[l] = append(acked[l], line)
		if i%7 == 3 {
			if err := b.Agent("a").Block(labels[(i+1)%3]).Rebase(ctx); err != nil {
				t.Fatalf("rebase: %v", err)
			}
		}
		if i%11 == 5 {
			if err := a.Agent("a").Block(labels[(i+2)%3]).Rebase(ctx); err != nil {
				t.Fatalf("rebase a: %v", err)
			}
		}
	}
	if err := a.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	cold := openFile(t, path, nil)
	for _, l := range labels {
		d, err := cold.Agent("a").Block(l).Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got := d.Render()
		for _, line := range acked[l] {
			if n := strings.Count(got, line); n != 1 {
				t.Errorf("block %s: %q %d times", l, line, n)
			}
		}
	}
}
