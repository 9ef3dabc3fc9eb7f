package memory

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/blocks"
)

// Two Stores on one file, several goroutines each, appending unique tokens
// to one shared block and to blocks of their own while epochs switch
// behind the writes (CompactAfter 3, HistoryLimit 1): every acknowledged
// token is in every store, and in a store opened afterwards, exactly once.
func TestTwoStoresConvergeAcrossSwitches(t *testing.T) {
	for _, wb := range []bool{false, true} {
		t.Run(fmt.Sprintf("s2WriteBack=%v", wb), func(t *testing.T) { twoStores(t, wb) })
	}
}

func twoStores(t *testing.T, wb bool) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	logs := &syncBuf{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelError}))
	defer func() {
		if l := logs.String(); l != "" {
			t.Errorf("logged errors:\n%.3000s", l)
		}
	}()
	s1, err := Open(ctx, path, &Options{CompactAfter: 3, HistoryLimit: 1, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s1.Close()
	s2, err := Open(ctx, path, &Options{CompactAfter: 3, HistoryLimit: 1, WriteBack: wb, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	const (
		per  = 3
		each = 100
	)
	labels := []string{"shared"}
	for si := range 2 {
		for g := range per {
			labels = append(labels, fmt.Sprintf("own-%d-%d", si, g))
		}
	}
	for _, l := range labels {
		if _, err := s1.Agent("ann").CreateBlock(ctx, BlockSpec{Label: l, Value: "start", Permission: blocks.Admin, CharLimit: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	var (
		mu    sync.Mutex
		acked = map[string][]string{} // label -> tokens
	)
	var wg sync.WaitGroup
	for si, s := range []*Store{s1, s2} {
		for g := range per {
			wg.Add(1)
			go func() {
				defer wg.Done()
				own := fmt.Sprintf("own-%d-%d", si, g)
				// A marker of its own in each block, rewritten on every
				// round: the history outgrows the content, so epochs switch.
				marker := func(i int) string {
					return fmt.Sprintf("{s%d-g%d-round-%d-%s}", si, g, i, strings.Repeat("~", 60))
				}
				for _, l := range []string{"shared", own} {
					if err := s.Agent("ann").Block(l).Append(ctx, "\n"+marker(0)); err != nil {
						t.Error(err)
					}
				}
				for i := range each {
					for _, l := range []string{"shared", own} {
						if _, err := s.Agent("ann").Block(l).Replace(ctx, marker(i), marker(i+1)); err != nil {
							t.Errorf("replace in %s: %v", l, err)
						}
					}
					for _, l := range []string{"shared", own} {
						tok := fmt.Sprintf("[%s:s%d-g%d-%d]", l, si, g, i)
						if err := s.Agent("ann").Block(l).Append(ctx, "\n"+tok); err != nil {
							t.Errorf("append %s: %v", tok, err)
							continue
						}
						mu.Lock()
						acked[l] = append(acked[l], tok)
						mu.Unlock()
					}
					if i%10 == 9 {
						if err := s.Flush(ctx); err != nil {
							t.Errorf("flush: %v", err)
						}
					}
				}
			}()
		}
	}
	wg.Wait()
	for _, s := range []*Store{s2, s1, s2} {
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	s3, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s3.Close()
	var epochs int64
	s1.rdb.QueryRow(`SELECT sum(epoch) FROM blocks`).Scan(&epochs)
	t.Logf("%d epochs switched in all", epochs)
	for name, s := range map[string]*Store{"s1": s1, "s2": s2, "s3 (reopened)": s3} {
		for _, l := range labels {
			r, err := s.Agent("ann").Block(l).Render(ctx)
			if err != nil {
				t.Fatalf("%s: %s: %v", name, l, err)
			}
			doc, err := s.Agent("ann").Block(l).Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range []string{r, doc.Render()} {
				for _, tok := range acked[l] {
					if n := strings.Count(text, tok); n != 1 {
						t.Errorf("%s: block %s: acknowledged %s present %d times", name, l, tok, n)
					}
				}
			}
		}
	}
}
