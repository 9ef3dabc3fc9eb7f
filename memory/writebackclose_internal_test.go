package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
)

// TestWriteBackApprovalThroughADisplacedCopy: an approval (written
// through even in write-back mode) reaching a copy displaced between
// lookup and lock, while another copy holds a pending append, checks the
// limit with that append.
func TestWriteBackApprovalThroughADisplacedCopy(t *testing.T) {
	ctx := context.Background()
	c, a, path := writeBackTwoBlocks(t, BlockSpec{CharLimit: 30})
	p, err := a.Block("x").Propose(ctx, Edit{Op: blocks.OpAppendText, Text: strings.Repeat("p", 20)}, "why")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Block("x").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	check := appendWhileDisplaced(t, c, a)
	check("approval", a.ApproveProposal(ctx, p.ID))
	if got := reopenedText(t, c, path, "x"); got != strings.Repeat("a", 20) {
		t.Fatalf("reopened: %q, want the acknowledged append alone", got)
	}
}

// TestWriteBackCopiesBesideClose: writers through Block.Append and views,
// with a cache of one and reads evicting, while Close runs: each write
// either is acknowledged and persisted, or fails with ErrClosed.
func TestWriteBackCopiesBesideClose(t *testing.T) {
	for round := range 6 {
		t.Run(fmt.Sprint(round), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			path := filepath.Join(t.TempDir(), "wb.db")
			c := openForTest(t, path, &Options{CacheSize: 1, WriteBack: true})
			a := c.Agent("ada")
			for _, l := range []string{"x", "y"} {
				if _, err := a.CreateBlock(ctx, BlockSpec{Label: l, CharLimit: 200_000}); err != nil {
					t.Fatal(err)
				}
			}
			var mu sync.Mutex
			var acked []string
			var wg sync.WaitGroup
			for w := range 3 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						tok := fmt.Sprintf("<%d-%d>", w, i)
						var err error
						switch w {
						case 0:
							err = a.Block("x").Append(ctx, tok)
						case 1:
							var d *blocks.Document
							if d, err = a.Block("x").Doc(ctx); err == nil {
								_, _ = a.Block("y").Doc(ctx)
								err = d.AppendText(tok, blocks.Agent)
								if errors.Is(err, ErrBlockBusy) {
									continue
								}
							}
						case 2:
							if _, err = a.Block("y").Doc(ctx); err == nil {
								err = a.Block("x").Append(ctx, tok)
							}
						}
						if err != nil {
							if !errors.Is(err, ErrClosed) {
								t.Errorf("writer %d: %v", w, err)
							}
							return
						}
						mu.Lock()
						acked = append(acked, tok)
						mu.Unlock()
					}
				}()
			}
			time.Sleep(time.Duration(20+10*round) * time.Millisecond)
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-ctx.Done():
				t.Fatal("writers still running after Close")
			}
			c = openForTest(t, path, nil)
			defer c.Close()
			got, err := c.Agent("ada").Block("x").Render(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, tok := range acked {
				if k := strings.Count(got, tok); k != 1 {
					t.Errorf("acknowledged %s: %d times after reopen (%d acked)", tok, k, len(acked))
				}
			}
		})
	}
}

// TestWriteBackCopiesInMemoryNoDeadlock: views, appends, Persist, Flush
// and reads of other blocks on ":memory:" (one connection) with a cache of
// one all finish.
func TestWriteBackCopiesInMemoryNoDeadlock(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	c := openForTest(t, ":memory:", &Options{CacheSize: 1, WriteBack: true})
	defer c.Close()
	a := c.Agent("ada")
	labels := []string{"x", "y", "z"}
	for _, l := range labels {
		if _, err := a.CreateBlock(ctx, BlockSpec{Label: l, CharLimit: 200_000}); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 100 {
				l := labels[(w+i)%3]
				var err error
				switch w {
				case 0:
					err = a.Block(l).Append(ctx, "a")
				case 1:
					var d *blocks.Document
					if d, err = a.Block(l).Doc(ctx); err == nil {
						_, _ = a.Block(labels[(w+i+1)%3]).Render(ctx)
						if err = d.AppendText("v", blocks.Agent); errors.Is(err, ErrBlockBusy) {
							err = nil
						}
					}
				case 2:
					err = a.Block(l).Persist(ctx)
				case 3:
					if err = c.Flush(ctx); err == nil {
						_, err = a.Block(l).Doc(ctx)
					}
				}
				if err != nil {
					t.Errorf("worker %d: %v", w, err)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(35 * time.Second):
		t.Fatal("deadlocked")
	}
}
