package memory

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/schema"
)

// openLoggingErrors opens a store in a temporary directory whose blocks
// start a new epoch every few writes, and returns it with what it logs at
// level Error.
func openLoggingErrors(t *testing.T) (*Store, *syncBuf) {
	t.Helper()
	logs := &syncBuf{}
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "r.db"), &Options{CompactAfter: 4, HistoryLimit: 1,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelError}))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, logs
}

// syncBuf is a bytes.Buffer safe for a logger and a test to share.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Close or Flush called by a subscriber of the epoch switch's Remote
// event returns (TestCloseFromASubscriberInsideAWrite holds it for
// writes): the event fires in the rebase goroutine's last unlock, after
// the goroutine stopped counting as running, since Flush waits for it.
func TestCloseFromASubscriberOfAnEpochSwitch(t *testing.T) {
	for _, call := range []string{"Close", "Flush"} {
		t.Run(call, func(t *testing.T) {
			ctx := context.Background()
			// (Not rebasingStore: its cleanup's Close would hang too.)
			s, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"), &Options{CompactAfter: 4, HistoryLimit: 1})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: "notes", Value: notesText(0), Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
			view, err := s.Agent("ann").Block("notes").Doc(ctx)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			var once sync.Once
			view.Subscribe(func(ev blocks.Event) {
				if ev.Remote {
					once.Do(func() {
						if call == "Close" {
							done <- s.Close()
						} else {
							done <- s.Flush(ctx)
						}
					})
				}
			})
			rewriteUntilRebase(t, s, func() {})
			select {
			case err := <-done:
				if err != nil {
					t.Fatal(err)
				}
				s.Close()
			case <-time.After(10 * time.Second):
				if call == "Flush" {
					fctx, cancel := context.WithTimeout(ctx, time.Second)
					t.Logf("then Flush from the test's goroutine: %v", s.Flush(fctx))
					cancel()
				}
				t.Fatalf("%s called from the subscriber of the epoch switch's Remote event still waiting after 10 s", call)
			}
		})
	}
}

// A Log block with a Retention rotates its oldest entry out on each append
// once full, so an append made while the new epoch is built both drops
// and adds an entry: the catch-up writes both, and the block switches.
func TestRebaseOfALogThatRotatesDuringTheBuild(t *testing.T) {
	for _, during := range []bool{false, true} {
		t.Run(fmt.Sprintf("appendDuringBuild=%v", during), func(t *testing.T) { testLogRebase(t, during) })
	}
}

func testLogRebase(t *testing.T, during bool) {
	ctx := context.Background()
	s, logs := openLoggingErrors(t)
	if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: "events", Type: blocks.Log, Permission: blocks.Admin,
		Schema: schema.Log{Retention: 3}}); err != nil {
		t.Fatal(err)
	}
	app := func(i int) error {
		return s.Agent("ann").Block("events").Apply(ctx, Edit{Op: blocks.OpAppendLogEntry, Text: fmt.Sprintf("entry number %d", i)})
	}
	n := 0
	s.rebaseBuilt = func(*entry) {
		n++
		if !during {
			return
		}
		if err := app(10000 + n); err != nil { // an append while the epoch is built
			t.Error(err)
		}
	}
	for i := range 300 {
		if err := app(i); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var epoch int64
	if err := s.rdb.QueryRow(`SELECT epoch FROM blocks WHERE owner = 'ann' AND label = 'events'`).Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	if epoch == 0 {
		t.Fatalf("%d rebases built during 300 appends, none switched (epoch 0); log:\n%.1500s", n, logs.String())
	}
}

// A block written continuously by several goroutines still switches: the
// rebase goroutine waits for the block's lock among its writers (a lock
// only tried between their writes was not won within 5 s on a loaded
// machine).
func TestRebaseAndFlushUnderContendedWrites(t *testing.T) {
	ctx := context.Background()
	s := rebasingStore(t, filepath.Join(t.TempDir(), "r.db"))
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	writes := 0
	start := func() {
		for k := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					if err := s.Agent("ann").Block("notes").SetText(ctx, notesText(1000*k+i)); err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					writes++
					mu.Unlock()
				}
			}()
		}
	}
	rewriteUntilRebase(t, s, start)
	fctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	ferr := s.Flush(fctx)
	cancel()
	var epoch int64
	if err := s.rdb.QueryRow(`SELECT epoch FROM blocks WHERE owner = 'ann' AND label = 'notes'`).Scan(&epoch); err != nil {
		t.Fatal(err)
	}
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if ferr != nil || epoch == 0 {
		t.Fatalf("with 4 goroutines writing the block (%d writes): Flush: %v; epoch %d after 5 s", writes, ferr, epoch)
	}
}

// Write-back edits made while the new epoch is built: the switch writes
// them (attributed to their author) into the archived epoch and carries
// their value into the new one; another process reads them.
func TestRebaseWithWriteBackEditsDuringTheBuild(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s, err := Open(ctx, path, &Options{CompactAfter: 4, HistoryLimit: 1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: "notes", Value: notesText(0), Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	var last string
	built := false
	s.rebaseBuilt = func(*entry) {
		if built {
			return
		}
		built = true
		for k := 1; k <= 3; k++ {
			last = notesText(500 + k)
			if err := s.Agent("bob").Block("notes").SetText(ctx, last); err == nil {
				t.Error("bob wrote without a share")
			}
			if err := s.Agent("ann").Block("notes").SetText(ctx, last); err != nil {
				t.Error(err)
			}
		}
	}
	for i := 1; i <= 200 && !built; i++ {
		last = notesText(i)
		if err := s.Agent("ann").Block("notes").SetText(ctx, last); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if !built {
		t.Fatal("no rebase")
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ep, archived := epochNow(t, s); ep != 1 || archived != 1 {
		t.Fatalf("epoch %d, %d archived; want 1, 1", ep, archived)
	}
	if got := docText(t, s); got != last {
		t.Fatalf("doc %q, want %q", got, last)
	}
	s2 := openPeer(t, path)
	if got, err := s2.Agent("ann").Block("notes").Render(ctx); err != nil || got != last {
		t.Fatalf("other process: %q (%v), want %q", got, err, last)
	}
	if got := docText(t, s2); got != last {
		t.Fatalf("other process doc %q, want %q", got, last)
	}
	h, err := s.Agent("ann").Block("notes").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, ch := range h {
		t.Logf("epoch %d %s %s", ch.Epoch, ch.Actor, ch.Op)
	}
}

// A block deleted while its new epoch is built: the goroutine's switch
// finds the row gone, which is no failure and logs nothing.
func TestRebaseOfADeletedBlockLogsNoError(t *testing.T) {
	ctx := context.Background()
	s, logs := openLoggingErrors(t)
	if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: "notes", Value: notesText(0), Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	rewriteUntilRebase(t, s, func() {
		if err := s.Agent("ann").Block("notes").Delete(ctx); err != nil {
			t.Error(err)
		}
	})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if l := logs.String(); l != "" {
		t.Fatalf("logged:\n%s", l)
	}
}

// Another process with the block cached (and, in write-back mode, edits
// pending) follows the new epoch whose snapshot is a save followed by the
// catch-up change.
func TestOtherProcessFollowsACaughtUpEpoch(t *testing.T) {
	for _, wb := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeback=%v", wb), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "r.db")
			s := rebasingStore(t, path)
			s2, err := Open(ctx, path, &Options{WriteBack: wb})
			if err != nil {
				t.Fatal(err)
			}
			defer s2.Close()
			if _, err := s2.Agent("ann").Block("notes").Render(ctx); err != nil {
				t.Fatal(err)
			}
			release := make(chan struct{})
			n := rewriteUntilRebase(t, s, func() { <-release })
			for i := n + 1; i <= n+2; i++ {
				if err := s.Agent("ann").Block("notes").SetText(ctx, notesText(i)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s2.Agent("ann").Block("notes").Render(ctx); err != nil { // caches epoch 0 at n+2
				t.Fatal(err)
			}
			if wb {
				if err := s2.Agent("ann").Block("notes").Append(ctx, "\npending in s2"); err != nil {
					t.Fatal(err)
				}
			}
			close(release)
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			if ep, _ := epochNow(t, s); ep != 1 {
				t.Fatalf("epoch %d", ep)
			}
			want := notesText(n + 2)
			if wb {
				if err := s2.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				want += "\npending in s2"
			}
			if err := s2.Agent("ann").Block("notes").Append(ctx, "\ns2"); err != nil {
				t.Fatal(err)
			}
			if err := s2.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			want += "\ns2"
			for _, st := range []*Store{s, s2} {
				if got := docText(t, st); got != want {
					t.Fatalf("reads %q, want %q", got, want)
				}
			}
		})
	}
}

// The entry is evicted while its new epoch is built (CacheSize 1), the
// block is loaded again and written through the new entry: the old
// entry's switch loses none of those writes.
func TestRebaseOfAnEvictedEntry(t *testing.T) {
	for _, writeAfter := range []bool{false, true} {
		t.Run(fmt.Sprintf("writeThroughNewEntry=%v", writeAfter), func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "r.db")
			s, err := Open(ctx, path, &Options{CompactAfter: 4, HistoryLimit: 1, CacheSize: 1})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			a := s.Agent("ann")
			if _, err := a.CreateBlock(ctx, BlockSpec{Label: "notes", Value: notesText(0), Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.CreateBlock(ctx, BlockSpec{Label: "other", Value: "x", Permission: blocks.Admin}); err != nil {
				t.Fatal(err)
			}
			var want string
			n := rewriteUntilRebase(t, s, func() {
				if _, err := a.Block("other").Render(ctx); err != nil { // evicts notes
					t.Error(err)
				}
				if err := a.Block("other").Append(ctx, "y"); err != nil {
					t.Error(err)
				}
				if writeAfter {
					want = "after eviction"
					if err := a.Block("notes").SetText(ctx, want); err != nil {
						t.Error(err)
					}
				}
			})
			if !writeAfter {
				want = notesText(n)
			}
			if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			ep, _ := epochNow(t, s)
			t.Logf("epoch %d", ep)
			if got := docText(t, s); got != want {
				t.Fatalf("reads %q, want %q", got, want)
			}
			if err := a.Block("notes").Append(ctx, "\nmore"); err != nil {
				t.Fatal(err)
			}
			s2 := openPeer(t, path)
			if got := docText(t, s2); got != want+"\nmore" {
				t.Fatalf("other process reads %q, want %q", got, want+"\nmore")
			}
		})
	}
}

// A peer's merge (MergeChanges) while the new epoch is built.
func TestRebaseWithAMergeDuringTheBuild(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s := rebasingStore(t, path)
	release := make(chan struct{})
	n := rewriteUntilRebase(t, s, func() { <-release })
	data := peerAppend(t, s, "\nfrom a peer")
	if err := s.Agent("ann").Block("notes").Merge(ctx, data); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := notesText(n) + "\nfrom a peer"
	if ep, _ := epochNow(t, s); ep != 1 {
		t.Fatalf("epoch %d", ep)
	}
	if got := docText(t, s); got != want {
		t.Fatalf("reads %q, want %q", got, want)
	}
	h, err := s.Agent("ann").Block("notes").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	merges := 0
	for _, ch := range h {
		if ch.Epoch == 0 && ch.Actor == "ann" && ch.Op == blocks.OpMerge {
			merges++
		}
	}
	if merges != 1 {
		for _, ch := range h {
			t.Logf("epoch %d %s %s", ch.Epoch, ch.Actor, ch.Op)
		}
		t.Fatalf("%d merges attributed to ann in the archived epoch", merges)
	}
	s2 := openPeer(t, path)
	if got := docText(t, s2); got != want {
		t.Fatalf("other process reads %q, want %q", got, want)
	}
}
