package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/testenv"
)

// TestWriteBackCopiesStress: write-back writers through Block.Append and
// through Block.Doc views on one block, readers of other blocks evicting it
// (CacheSize 1 and 2), Flush and Persist beside, and a second store on
// the same file writing too. Every acknowledged append is read next by
// its writer (Doc), and is in the block exactly once after Close and
// reopen; no writer gets ErrBlockBusy from Append; it all ends in time.
func TestWriteBackCopiesStress(t *testing.T) {
	for _, size := range []int{1, 2} {
		t.Run(fmt.Sprint("cache", size), func(t *testing.T) { writeBackStress(t, size) })
	}
}

func writeBackStress(t *testing.T, size int) {
	g0 := runtime.NumGoroutine()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "wb.db")
	c := openForTest(t, path, &Options{CacheSize: size, WriteBack: true})
	a := c.Agent("ada")
	for _, l := range []string{"x", "y", "z"} {
		if _, err := a.CreateBlock(ctx, BlockSpec{Label: l, CharLimit: 200_000}); err != nil {
			t.Fatal(err)
		}
	}
	c2 := openForTest(t, path, &Options{CacheSize: size, WriteBack: true})
	b := c2.Agent("ada")

	var mu sync.Mutex
	var acked []string
	var renderMiss, staleViews atomic.Int64
	ack := func(tok string) { mu.Lock(); acked = append(acked, tok); mu.Unlock() }
	stop := make(chan struct{})
	var bg, writers sync.WaitGroup
	const n = 60
	for w := range 2 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for i := range n {
				tok := fmt.Sprintf("<a%d-%d>", w, i)
				if err := a.Block("x").Append(ctx, tok); err != nil {
					t.Errorf("append %s: %v", tok, err)
					return
				}
				ack(tok)
				doc, err := a.Block("x").Doc(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if !strings.Contains(doc.Render(), tok) {
					t.Errorf("acknowledged %s missing from the next Doc", tok)
					return
				}
				if r, err := a.Block("x").Render(ctx); err == nil && !strings.Contains(r, tok) {
					renderMiss.Add(1)
				}
			}
		}()
	}
	writers.Add(1)
	go func() { // through views
		defer writers.Done()
		for i := range n {
			tok := fmt.Sprintf("<v%d>", i)
			for try := 0; ; try++ {
				doc, err := a.Block("x").Doc(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 { // let it go stale
					_, _ = a.Block("y").Doc(ctx)
					_, _ = a.Block("z").Doc(ctx)
				}
				err = doc.AppendText(tok, blocks.Agent)
				if errors.Is(err, ErrBlockBusy) && try < 20 {
					staleViews.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("view append %s: %v", tok, err)
					return
				}
				break
			}
			ack(tok)
			doc, err := a.Block("x").Doc(ctx)
			if err != nil {
				t.Error(err)
				return
			}
			if !strings.Contains(doc.Render(), tok) {
				t.Errorf("acknowledged view %s missing from the next Doc", tok)
				return
			}
		}
	}()
	writers.Add(1)
	go func() { // the other store
		defer writers.Done()
		for i := range n {
			tok := fmt.Sprintf("<b%d>", i)
			if err := b.Block("x").Append(ctx, tok); err != nil {
				t.Errorf("store 2 append %s: %v", tok, err)
				return
			}
			ack(tok)
			if i%5 == 0 {
				if err := c2.Flush(ctx); err != nil {
					t.Errorf("store 2 flush: %v", err)
				}
			}
		}
	}()
	bg.Add(2)
	go func() { // readers evicting x
		defer bg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			l := []string{"y", "z"}[i%2]
			if _, err := a.Block(l).Doc(ctx); err != nil {
				t.Error(err)
				return
			}
			if _, err := b.Block(l).Doc(ctx); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	go func() { // flush and persist
		defer bg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(3 * time.Millisecond):
			}
			var err error
			if i%2 == 0 {
				err = c.Flush(ctx)
			} else {
				err = a.Block("x").Persist(ctx)
			}
			if err != nil {
				t.Errorf("flush/persist: %v", err)
				return
			}
		}
	}()
	finished := make(chan struct{})
	go func() { writers.Wait(); close(stop); bg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(80 * time.Second):
		buf := make([]byte, 1<<20)
		t.Fatalf("still running after 80 s:\n%s", buf[:runtime.Stack(buf, true)])
	}
	t.Logf("Render misses: %d, stale-view retries: %d", renderMiss.Load(), staleViews.Load())
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c2.Close(); err != nil {
		t.Fatal(err)
	}
	c = openForTest(t, path, nil)
	got, err := c.Agent("ada").Block("x").Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tok := range acked {
		if k := strings.Count(got, tok); k != 1 {
			t.Errorf("acknowledged %s is %d times in the reopened block", tok, k)
		}
	}
	if len(acked) != 4*n {
		t.Errorf("%d acknowledged, want %d", len(acked), 4*n)
	}
	if g := testenv.SettleGoroutines(g0+2, 3*time.Second); g > g0+2 {
		t.Errorf("goroutines: %d before, %d after\n%s", g0, g, testenv.GoroutineDump())
	}
}

// TestWriteBackCopiesLimit: in one store, appends through Block and
// through views (some stale) with a cache of one never leave the block
// past its limit after Close.
func TestWriteBackCopiesLimit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	path := filepath.Join(t.TempDir(), "wb.db")
	c := openForTest(t, path, &Options{CacheSize: 1, WriteBack: true})
	a := c.Agent("ada")
	const limit = 600
	for _, l := range []string{"x", "y"} {
		if _, err := a.CreateBlock(ctx, BlockSpec{Label: l, CharLimit: limit}); err != nil {
			t.Fatal(err)
		}
	}
	line := strings.Repeat("q", 9) + "\n"
	var wg sync.WaitGroup
	var views []*blocks.Document
	for range 4 {
		d, err := a.Block("x").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		views = append(views, d)
		_, _ = a.Block("y").Doc(ctx)
	}
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				var err error
				switch w {
				case 0:
					err = a.Block("x").Append(ctx, line)
				case 1:
					err = views[i%len(views)].AppendText(line, blocks.Agent)
				case 2:
					_, err = a.Block("y").Doc(ctx)
					if err == nil && i%4 == 0 {
						err = c.Flush(ctx)
					}
				}
				if err != nil && !errors.Is(err, blocks.ErrLimit) && !errors.Is(err, ErrBlockBusy) {
					t.Errorf("writer %d: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c = openForTest(t, path, nil)
	defer c.Close()
	got, err := c.Agent("ada").Block("x").Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n := len([]rune(got)); n > limit {
		t.Fatalf("reopened: %d characters, limit %d", n, limit)
	}
}
