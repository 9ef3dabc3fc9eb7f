package memory

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"
)

// TestEditReadsItselfWhileAMergeIsInFlight: an edit that returned reads
// itself through a view, even while another writer's merge, started right
// after the edit's Write released the block, is in flight. The merge hides
// its own state from views, not the edit's: what views read meanwhile is
// the state the merge met, edit included.
func TestEditReadsItselfWhileAMergeIsInFlight(t *testing.T) {
	ctx := context.Background()
	s, _ := openOneBlock(t)
	doc, err := s.GetBlock(ctx, "ann", "notes")
	if err != nil {
		t.Fatal(err)
	}
	peerData := peerAppend(t, s, "from a peer\n")

	merged := make(chan struct{})
	release := make(chan struct{})
	mergeDone := make(chan error, 1)
	started := false
	s.afterWrite = func() {
		// The edit's Write released the block; its call has not returned.
		s.afterWrite = nil
		started = true
		once := false
		s.testDecide = func(*sql.Tx) error {
			if !once {
				once = true
				close(merged) // the merge is applied, its write not over
				<-release
			}
			return nil
		}
		go func() { mergeDone <- s.Agent("ann").Block("notes").Merge(ctx, peerData) }()
		select {
		case <-merged:
		case <-time.After(10 * time.Second):
			t.Error("the merge did not reach its transaction")
		}
	}
	if err := s.appendToBlock(ctx, "ann", "notes", "mine\n"); err != nil {
		t.Fatal(err)
	}
	if !started {
		t.Fatal("the edit did not run through entry.Write")
	}
	// The edit returned: its author reads it.
	got, _ := doc.Value()
	close(release)
	if err := <-mergeDone; err != nil {
		t.Fatal(err)
	}
	s.testDecide = nil
	if str, _ := got.(string); !strings.Contains(str, "mine") {
		t.Errorf("right after its edit returned, the editor's view reads %q, without the edit", str)
	}
	after, _ := doc.Value()
	if str, _ := after.(string); !strings.Contains(str, "mine") || !strings.Contains(str, "from a peer") {
		t.Errorf("after both writes the view reads %q", str)
	}
}
