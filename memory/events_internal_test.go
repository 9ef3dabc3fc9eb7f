package memory

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/blocks"
)

// A MergeChanges a Remote subscriber makes while a local edit's write is
// ending is not read by views while its own write is in flight (a hook in
// that write reads the view), and is gone after that write fails.
func TestMergeFromASubscriberIsNotReadInFlight(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	a, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if _, err := a.createBlock(ctx, "ada", BlockSpec{Label: "notes", Value: "durable"}); err != nil {
		t.Fatal(err)
	}
	view, err := a.getBlock(ctx, "ada", "notes")
	if err != nil {
		t.Fatal(err)
	}
	fork, err := view.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if err := fork.AppendText(" MERGED", blocks.System); err != nil {
		t.Fatal(err)
	}
	data, _, err := fork.PendingChanges()
	if err != nil {
		t.Fatal(err)
	}
	failing := func(seen *string) func(*sql.Tx) error {
		return func(*sql.Tx) error {
			*seen, _ = view.Text() // a reader while the merge's write is in flight
			return errors.New("injected failure")
		}
	}
	if err := b.appendToBlock(ctx, "ada", "notes", " b"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	var nested string
	var mergeErr error
	ran := false
	view.Subscribe(func(ev blocks.Event) {
		if ev.Remote {
			once.Do(func() {
				ran = true
				a.testDecide = failing(&nested)
				mergeErr = a.mergeChanges(ctx, "ada", "ada", "notes", data)
				a.testDecide = nil
			})
		}
	})
	if err := view.AppendText(" a", blocks.Agent); err != nil {
		t.Fatal(err)
	}
	if !ran || mergeErr == nil {
		t.Fatalf("the subscriber's merge: ran %v, err %v (want a run that fails)", ran, mergeErr)
	}
	if strings.Contains(nested, "MERGED") {
		t.Fatalf("a view read a merge whose write then failed, while it was in flight: %q", nested)
	}
	if final, _ := view.Text(); strings.Contains(final, "MERGED") {
		t.Fatalf("after the failed merge the view reads %q", final)
	}
}
