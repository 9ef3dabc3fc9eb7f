package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
)

// rebasingStore opens a store at path whose blocks start a new epoch
// every few rewrites, with ann's block "notes" of four lines.
func rebasingStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, &Options{CompactAfter: 4, HistoryLimit: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Agent("ann").CreateBlock(context.Background(), BlockSpec{Label: "notes", Value: notesText(0), Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	return s
}

// openPeer opens another Store on the file at path (another process's,
// as far as the block cache goes), closed when the test ends.
func openPeer(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// notesText is the block's text after rewrite i: each rewrite changes a
// whole line, so the history soon outweighs the text.
func notesText(i int) string {
	lines := []string{"alpha", "beta", "gamma", "delta"}
	for k := range i {
		lines[k%len(lines)] = fmt.Sprintf("line %d rewritten as rewrite number %d", k%len(lines), k)
	}
	return strings.Join(lines, "\n")
}

// within runs f and fails t if it does not return within d.
func within(t *testing.T, d time.Duration, what string, f func() error) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	case <-time.After(d):
		t.Fatalf("%s: still waiting after %v", what, d)
	}
}

// rewriteUntilRebase rewrites ann's "notes" until a new epoch is built
// behind the writes, and runs during (once) in the rebase's goroutine
// between its build and its switch. It returns the rewrites' count.
func rewriteUntilRebase(t *testing.T, s *Store, during func()) int {
	t.Helper()
	ctx := context.Background()
	entered := make(chan struct{})
	var once sync.Once
	s.rebaseBuilt = func(*entry) {
		once.Do(func() {
			close(entered)
			during()
		})
	}
	for i := 1; i <= 200; i++ {
		within(t, 10*time.Second, fmt.Sprintf("rewrite %d", i), func() error {
			return s.Agent("ann").Block("notes").SetText(ctx, notesText(i))
		})
		select {
		case <-entered:
			return i
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatal("200 rewrites started no new epoch")
	return 0
}

// docText is ann's "notes" as its document reads (not its stored
// rendering).
func docText(t *testing.T, s *Store) string {
	t.Helper()
	doc, err := s.Agent("ann").Block("notes").Doc(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return doc.Render()
}

func epochNow(t *testing.T, s *Store) (epoch, archived int64) {
	t.Helper()
	if err := s.rdb.QueryRow(`SELECT epoch, (SELECT count(*) FROM block_archive a WHERE a.block_id = b.id)
		FROM blocks b WHERE owner = 'ann' AND label = 'notes'`).Scan(&epoch, &archived); err != nil {
		t.Fatal(err)
	}
	return epoch, archived
}

// A new epoch is built behind the write that found it due: the writes
// after it go on while the fresh document is built, and the switch
// carries them into the new epoch, each kept with its own author in the
// archived one.
func TestRebaseCatchesUpWithWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s := rebasingStore(t, path)
	release := make(chan struct{})
	n := rewriteUntilRebase(t, s, func() { <-release })

	// The build is held; writes do not wait for it.
	type step struct {
		heads []string
		text  string
	}
	var during []step
	for i := n + 1; i <= n+3; i++ {
		within(t, 10*time.Second, "a write while the new epoch is built", func() error {
			return s.Agent("ann").Block("notes").SetText(ctx, notesText(i))
		})
		doc, err := s.Agent("ann").Block("notes").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		during = append(during, step{doc.Heads(), notesText(i)})
	}
	if ep, _ := epochNow(t, s); ep != 0 {
		t.Fatalf("epoch %d before the build was let go, want 0", ep)
	}
	close(release)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := notesText(n + 3)
	if ep, archived := epochNow(t, s); ep != 1 || archived != 1 {
		t.Fatalf("epoch %d, %d archived after the switch; want 1, 1", ep, archived)
	}
	if got, err := s.Agent("ann").Block("notes").Render(ctx); err != nil || got != want {
		t.Fatalf("after the switch the block reads %q (%v), want %q", got, err, want)
	}
	if got := docText(t, s); got != want {
		t.Fatalf("after the switch the document reads %q, want %q", got, want)
	}
	h, err := s.Agent("ann").Block("notes").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var rebases int
	for _, ch := range h {
		if ch.Epoch == 1 && ch.Op == blocks.OpRebase {
			rebases++
		}
	}
	if rebases != 2 {
		t.Fatalf("the new epoch begins with %d rebase changes, want 2 (the build and the catch-up)", rebases)
	}
	// The writes made during the build are in the archived epoch, as of
	// their own heads.
	for _, st := range during {
		at, err := s.Agent("ann").Block("notes").At(ctx, st.heads)
		if err != nil {
			t.Fatalf("as of a write made during the build: %v", err)
		}
		if got := at.Render(); got != st.text {
			t.Fatalf("as of a write made during the build: %q, want %q", got, st.text)
		}
	}
	// Another process loads the new epoch (a saved document followed by
	// the catch-up change) to the same text, and writes on it.
	s2 := openPeer(t, path)
	if got := docText(t, s2); got != want {
		t.Fatalf("a cold load reads %q, want %q", got, want)
	}
	if err := s2.Agent("ann").Block("notes").Append(ctx, "\nfrom s2"); err != nil {
		t.Fatal(err)
	}
	if err := s.Agent("ann").Block("notes").Append(ctx, "\nfrom s"); err != nil {
		t.Fatal(err)
	}
	if got, _ := s2.Agent("ann").Block("notes").Render(ctx); got != want+"\nfrom s2\nfrom s" {
		t.Fatalf("after both stores appended: %q", got)
	}
}

// A block reconfigured while its new epoch was built keeps its epoch (the
// fresh document has the old metadata); a later compaction starts one.
func TestRebaseLeavesABlockReconfiguredMeanwhile(t *testing.T) {
	ctx := context.Background()
	s := rebasingStore(t, filepath.Join(t.TempDir(), "r.db"))
	n := rewriteUntilRebase(t, s, func() {
		if err := s.Agent("ann").Block("notes").SetType(ctx, blocks.Core); err != nil {
			t.Error(err)
		}
	})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ep, _ := epochNow(t, s); ep != 0 {
		t.Fatalf("epoch %d after a reconfiguration during the build, want 0", ep)
	}
	doc, err := s.Agent("ann").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if doc.Info().Type != blocks.Core || doc.Render() != notesText(n) {
		t.Fatalf("the block is %v reading %q, want core reading %q", doc.Info().Type, doc.Render(), notesText(n))
	}
	s.rebaseBuilt = nil
	for i := n + 1; i <= n+200; i++ {
		if err := s.Agent("ann").Block("notes").SetText(ctx, notesText(i)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if ep, _ := epochNow(t, s); ep > 0 {
			if got, _ := s.Agent("ann").Block("notes").Render(ctx); got != notesText(i) {
				t.Fatalf("after the later rebase: %q, want %q", got, notesText(i))
			}
			return
		}
	}
	t.Fatal("no later compaction started a new epoch")
}

// Another process's write while the new epoch was built reaches the block
// in the switch's transaction: the fresh document lacks it, so the epoch
// stays, and nothing either process wrote is lost.
func TestRebaseLeavesABlockAnotherProcessWrote(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s := rebasingStore(t, path)
	s2 := openPeer(t, path)
	n := rewriteUntilRebase(t, s, func() {
		if err := s2.Agent("ann").Block("notes").Append(ctx, "\nfrom s2"); err != nil {
			t.Error(err)
		}
	})
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if ep, _ := epochNow(t, s); ep != 0 {
		t.Fatalf("epoch %d after another process wrote during the build, want 0", ep)
	}
	want := notesText(n) + "\nfrom s2"
	if err := s.Agent("ann").Block("notes").Append(ctx, "\nfrom s"); err != nil {
		t.Fatal(err)
	}
	want += "\nfrom s"
	for _, st := range []*Store{s, s2} {
		if got, err := st.Agent("ann").Block("notes").Render(ctx); err != nil || got != want {
			t.Fatalf("the block reads %q (%v), want %q", got, err, want)
		}
	}
}

// Close waits for a new epoch being built, which then gives up its switch;
// the block reopens as it was.
func TestCloseDuringRebase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s := rebasingStore(t, path)
	release := make(chan struct{})
	n := rewriteUntilRebase(t, s, func() { <-release })
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a new epoch was being built", err)
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waiting 10 s after the build was let go")
	}
	s2 := openPeer(t, path)
	if got, err := s2.Agent("ann").Block("notes").Render(ctx); err != nil || got != notesText(n) {
		t.Fatalf("reopened: %q (%v), want %q", got, err, notesText(n))
	}
}
