package blocks_test

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/blockseam"
	"github.com/engram-go/engram/schema"
)

func forkPair(t *testing.T, d *blocks.Document) (*blocks.Document, *blocks.Document) {
	a, err := d.Fork()
	must(t, err)
	b, err := d.Fork()
	must(t, err)
	return a, b
}

func TestMergeConcurrentTextAppends(t *testing.T) {
	for _, order := range []string{"a<-b", "b<-a"} {
		t.Run(order, func(t *testing.T) {
			base := textDoc(t, blocks.ReadWrite)
			a, b := forkPair(t, base)
			must(t, a.AppendText(" from A", blocks.Agent))
			must(t, b.AppendText(" from B", blocks.Agent))
			// Merge both ways: both appends survive and renders agree.
			if order == "a<-b" {
				must(t, a.Merge(b))
				must(t, b.Merge(a))
			} else {
				must(t, b.Merge(a))
				must(t, a.Merge(b))
			}
			ra, rb := a.Render(), b.Render()
			if ra != rb {
				t.Fatalf("replicas disagree: %q vs %q", ra, rb)
			}
			if !strings.Contains(ra, " from A") || !strings.Contains(ra, " from B") || !strings.HasPrefix(ra, "hello world") {
				t.Fatalf("an append was lost: %q", ra)
			}
		})
	}
}

func TestMergeConcurrentEditsInsideText(t *testing.T) {
	base := newDoc(t, schema.Text{}, blocks.ReadWrite)
	must(t, base.SetText("alpha\nbeta\ngamma\n", blocks.System))
	a, b := forkPair(t, base)
	// Whole-value writes are diffed, so edits on different lines merge.
	must(t, a.SetText("ALPHA\nbeta\ngamma\n", blocks.Agent))
	must(t, b.SetText("alpha\nbeta\nGAMMA\n", blocks.Agent))
	must(t, a.Merge(b))
	if got, _ := a.Text(); got != "ALPHA\nbeta\nGAMMA\n" {
		t.Fatalf("merged text = %q", got)
	}
}

func TestMergeCounters(t *testing.T) {
	base := mapDoc(t, blocks.ReadWrite)
	a, b := forkPair(t, base)
	must(t, a.IncrementCounter("n", 3, blocks.Agent))
	must(t, b.IncrementCounter("n", 4, blocks.Agent))
	must(t, a.Merge(b))
	must(t, b.Merge(a))
	for _, d := range []*blocks.Document{a, b} {
		v, err := d.Field("n")
		must(t, err)
		if v != int64(7) {
			t.Fatalf("counter = %v, want 7", v)
		}
	}
	// SetField on a counter moves it by the difference, so it merges too.
	c, e := forkPair(t, a)
	must(t, c.SetField("n", int64(10), blocks.Agent)) // +3
	must(t, e.IncrementCounter("n", 1, blocks.Agent))
	must(t, c.Merge(e))
	if v, _ := c.Field("n"); v != int64(11) {
		t.Fatalf("counter after SetField+Increment merge = %v, want 11", v)
	}
}

func TestMergeListPushes(t *testing.T) {
	base := listDoc(t, blocks.ReadWrite)
	a, b := forkPair(t, base)
	must(t, a.PushItem("from A", blocks.Agent))
	must(t, b.PushItem("from B", blocks.Agent))
	must(t, a.Merge(b))
	must(t, b.Merge(a))
	ia, _ := a.Items()
	ib, _ := b.Items()
	if len(ia) != 3 || a.Render() != b.Render() {
		t.Fatalf("items = %v / %v", ia, ib)
	}
	got := a.Render()
	if !strings.Contains(got, "from A") || !strings.Contains(got, "from B") {
		t.Fatalf("a push was lost: %q", got)
	}
}

func TestIncrementalSaveLoadAndPendingChanges(t *testing.T) {
	a := textDoc(t, blocks.ReadWrite)
	full, err := a.Save()
	must(t, err)
	b, err := blocks.Load(a.Info(), full, nil)
	must(t, err)
	must(t, blockseam.MarkPersisted(a, a.Heads()))

	must(t, a.AppendText(" A1", blocks.Agent))
	must(t, b.AppendText(" B1", blocks.Agent))
	da, ha, err := a.PendingChanges()
	must(t, err)
	db, hb, err := b.PendingChanges()
	must(t, err)
	if len(da) == 0 || len(db) == 0 {
		t.Fatal("expected pending changes on both replicas")
	}
	must(t, blockseam.MarkPersisted(a, ha))
	must(t, blockseam.MarkPersisted(b, hb))
	must(t, a.LoadIncremental(db))
	must(t, b.LoadIncremental(da))
	if a.Render() != b.Render() {
		t.Fatalf("replicas disagree: %q / %q", a.Render(), b.Render())
	}
	// Changes that arrived from b are b's to persist, not a's.
	if data, _, _ := a.PendingChanges(); len(data) != 0 {
		t.Fatalf("a re-exports %d bytes of b's changes", len(data))
	}
	if a.Dirty() {
		t.Fatal("a should be clean")
	}
	must(t, a.AppendText(" A2", blocks.Agent))
	if !a.Dirty() {
		t.Fatal("a should be dirty after a write")
	}
	// Incremental bytes applied twice are harmless.
	must(t, b.LoadIncremental(da))
	if err := b.LoadIncremental([]byte("not automerge")); !errors.Is(err, blocks.ErrCorrupt) {
		t.Fatalf("garbage LoadIncremental err = %v", err)
	}
}

func TestSyncProtocol(t *testing.T) {
	a := textDoc(t, blocks.ReadWrite)
	b, err := a.Fork()
	must(t, err)
	must(t, a.AppendText(" A", blocks.Agent))
	must(t, b.AppendText(" B", blocks.Agent))
	sa, sb := a.NewSyncState(), b.NewSyncState()
	for i := 0; i < 10; i++ {
		m1, ok1 := sa.GenerateMessage()
		if ok1 {
			must(t, sb.ReceiveMessage(m1))
		}
		m2, ok2 := sb.GenerateMessage()
		if ok2 {
			must(t, sa.ReceiveMessage(m2))
		}
		if !ok1 && !ok2 {
			break
		}
	}
	if a.Render() != b.Render() || !strings.Contains(a.Render(), " A") || !strings.Contains(a.Render(), " B") {
		t.Fatalf("sync did not converge: %q / %q", a.Render(), b.Render())
	}
}

func TestConcurrentWritersOneDocument(t *testing.T) {
	d := newDoc(t, schema.Text{}, blocks.ReadWrite)
	info := d.Info()
	info.CharLimit = 100000
	must(t, d.SetInfo(info))
	var events int64
	var mu sync.Mutex
	d.Subscribe(func(blocks.Event) { mu.Lock(); events++; mu.Unlock() })
	var wg sync.WaitGroup
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			v := d.View("w"+string(rune('a'+w)), blocks.Append)
			for i := 0; i < 25; i++ {
				if err := v.AppendText("x", blocks.Agent); err != nil {
					t.Error(err)
					return
				}
				_ = v.Render()
			}
		}(w)
	}
	wg.Wait()
	if got, _ := d.Text(); len(got) != 200 {
		t.Fatalf("len = %d, want 200", len(got))
	}
	if events != 200 {
		t.Fatalf("events = %d, want 200", events)
	}
}

// A refused merge rolls the document back to a fork with a new automerge
// actor; the replica's earlier unpersisted changes (under the old actor)
// are still pending, not taken for someone else's.
func TestPendingChangesSurviveARollback(t *testing.T) {
	d, err := blocks.New(blocks.Info{Label: "b", Type: blocks.Working, Schema: schema.Text{}, Permission: blocks.ReadWrite, Owner: "a", CharLimit: 20}, nil)
	must(t, err)
	_, heads, err := d.PendingChanges()
	must(t, err)
	must(t, blockseam.MarkPersisted(d, heads))
	other, err := d.Fork()
	must(t, err)
	must(t, d.SetText("mine", blocks.Agent))
	must(t, other.SetText(strings.Repeat("y", 19), blocks.Agent))
	theirs, err := other.Save()
	must(t, err)
	if err := d.LoadIncremental(theirs); !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("merge past the limit: %v, want ErrLimit", err)
	}
	data, _, err := d.PendingChanges()
	must(t, err)
	if len(data) == 0 {
		t.Fatal("the edit made before the rollback is no longer pending")
	}
	if got, _ := d.Text(); got != "mine" {
		t.Fatalf("after the refused merge: %q", got)
	}
}
