package memory

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
)

// The switch's transaction fails (a trigger refuses the archive row)
// after it wrote the write-back edits made during the build: the
// transaction rolls back, the edits stay pending and are flushed, and the
// block reopens with every acknowledged edit; once the trigger is gone a
// later rebase switches.
func TestFailedSwitchKeepsWriteBackEdits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	s, err := Open(ctx, path, &Options{CompactAfter: 4, HistoryLimit: 1, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Agent("ann").CreateBlock(ctx, BlockSpec{Label: "notes", Value: notesText(0), Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.rdb.Exec(`CREATE TRIGGER r2_fail BEFORE INSERT ON block_archive BEGIN SELECT RAISE(ABORT, 'injected archive failure'); END`); err != nil {
		t.Fatal(err)
	}
	var during []string
	builds := 0
	s.rebaseBuilt = func(*entry) {
		builds++
		tok := fmt.Sprintf("\n[during build %d]", builds)
		if err := s.Agent("ann").Block("notes").Append(ctx, tok); err != nil {
			t.Error(err)
			return
		}
		during = append(during, tok)
	}
	last := ""
	for i := 1; i <= 60; i++ {
		last = notesText(i)
		if err := s.Agent("ann").Block("notes").SetText(ctx, last); err != nil {
			t.Fatal(err)
		}
		during = nil // SetText replaces what was appended before
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if builds == 0 {
		t.Fatal("no rebase was built")
	}
	if ep, _ := epochNow(t, s); ep != 0 {
		t.Fatalf("epoch %d with the archive refused", ep)
	}
	s.rebaseBuilt = nil
	if err := s.Flush(ctx); err != nil { // the edits the last build's hook made, concurrent with the last Flush
		t.Fatal(err)
	}
	want := last + strings.Join(during, "")
	s2 := openPeer(t, path)
	if got := docText(t, s2); got != want {
		t.Fatalf("reopened after %d failed switches: %q, want %q", builds, got, want)
	}
	if _, err := s.rdb.Exec(`DROP TRIGGER r2_fail`); err != nil {
		t.Fatal(err)
	}
	for i := 61; i <= 120; i++ {
		if err := s.Agent("ann").Block("notes").SetText(ctx, notesText(i)); err != nil {
			t.Fatal(err)
		}
		if err := s.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		if ep, _ := epochNow(t, s); ep > 0 {
			want = notesText(i) + strings.Join(during, "")
			_ = want
			return
		}
	}
	t.Fatal("no epoch after the trigger was dropped")
}
