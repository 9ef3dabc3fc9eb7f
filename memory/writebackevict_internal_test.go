package memory

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/blocks"
)

// TestWriteBackEditsSurviveEvictions: in write-back mode, with a cache
// of one document and a reader loading two blocks in turn beside the
// writer, every acknowledged append is in the block the process reads
// next (not in a copy the cache dropped), the limit holds across the
// edits, and all of them are there after Close.
func TestWriteBackEditsSurviveEvictions(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wb.db")
	c, err := Open(ctx, path, &Options{CacheSize: 1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	a := c.Agent("ada")
	const limit = 6_000
	for _, l := range []string{"x", "y"} {
		if _, err := a.CreateBlock(ctx, BlockSpec{Label: l, CharLimit: limit}); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			for _, l := range []string{"y", "x"} {
				if _, err := a.Block(l).Doc(ctx); err != nil {
					t.Error(err)
					return
				}
			}
			reads.Add(1)
		}
	}()
	line := strings.Repeat("z", 19) + "\n"
	acked := 0
	for i := range 400 {
		err := a.Block("x").Append(ctx, line)
		if err != nil {
			if errors.Is(err, blocks.ErrLimit) {
				continue
			}
			close(stop)
			wg.Wait()
			t.Fatalf("append %d: %v", i, err)
		}
		acked++
		doc, err := a.Block("x").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(doc.Render(), "\n"); got != acked {
			close(stop)
			wg.Wait()
			t.Fatalf("append %d acknowledged (%d in all), then %d lines in the block's document (%d reads beside)", i, acked, got, reads.Load())
		}
	}
	close(stop)
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c, err = Open(ctx, path, nil); err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	got, err := c.Agent("ada").Block("x").Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(got)); n > limit || strings.Count(got, "\n") != acked {
		t.Fatalf("reopened: %d characters (limit %d), %d lines, %d acknowledged", n, limit, strings.Count(got, "\n"), acked)
	}
}
