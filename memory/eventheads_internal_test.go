package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/automerge/automerge-go"
	"github.com/engram-go/engram/blocks"
)

// endedLen reads how many writes' event heads doc holds (its core's
// ended map: unexported, and reflect may read a map's length without
// Interface).
func endedLen(t *testing.T, doc *blocks.Document) int {
	t.Helper()
	f := reflect.ValueOf(doc).Elem().FieldByName("c").Elem().FieldByName("ended")
	if !f.IsValid() {
		t.Fatal("no field ended")
	}
	return f.Len()
}

// TestMergesLeaveNoEventHeads: a merge runs under the store's hold with a
// token of its own, and no edit's event takes heads recorded for it: the
// store's release must record none, or every merge (a hostile peer's
// refused ones too) would leave an entry behind for as long as the block
// is cached.
func TestMergesLeaveNoEventHeads(t *testing.T) {
	s, _ := openOneBlock(t)
	ctx := context.Background()
	e := s.cachedEntry("ann", "notes")
	if e == nil {
		t.Fatal("the block is not cached")
	}
	const n = 20
	for i := range n {
		if err := s.Agent("ann").Block("notes").Merge(ctx, peerAppend(t, s, fmt.Sprintf("m%d\n", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := endedLen(t, e.doc); got != 0 {
		t.Errorf("after %d merges c.ended holds %d entries, want 0 (never taken out)", n, got)
	}
	// Refused merges (an Append sharee's rewrite: the input of a hostile
	// peer) leak as well.
	if err := s.Agent("ann").Block("notes").Share(ctx, "eve", blocks.Append); err != nil {
		t.Fatal(err)
	}
	before := endedLen(t, e.doc)
	for i := range n {
		doc, err := s.GetBlock(ctx, "ann", "notes")
		if err != nil {
			t.Fatal(err)
		}
		saved, err := doc.Save()
		if err != nil {
			t.Fatal(err)
		}
		peer, err := automerge.Load(saved)
		if err != nil {
			t.Fatal(err)
		}
		v, err := peer.Path("content").Get()
		if err != nil {
			t.Fatal(err)
		}
		if err := v.Text().Splice(0, 3, fmt.Sprintf("x%d", i)); err != nil {
			t.Fatal(err)
		}
		if _, err := peer.Commit("rewrite"); err != nil {
			t.Fatal(err)
		}
		if err := s.Agent("eve").Shared("ann", "notes").Merge(ctx, peer.SaveIncremental()); !errors.Is(err, blocks.ErrPermission) {
			t.Fatalf("refused merge: %v", err)
		}
	}
	if got := endedLen(t, e.doc) - before; got != 0 {
		t.Errorf("after %d refused merges c.ended grew by %d entries, want 0", n, got)
	}
}

// TestWritesLeaveNoEventHeads: however a write ends (applied, refused,
// failed, panicked, a forced rebase), nothing stays recorded for its
// event, and an edit's event names the heads its write left.
func TestWritesLeaveNoEventHeads(t *testing.T) {
	ctx := context.Background()
	s, _ := openOneBlock(t)
	e := s.cachedEntry("ann", "notes")
	var events [][]string
	cancel := e.doc.View("ann", blocks.ReadWrite).Subscribe(func(ev blocks.Event) {
		if ev.Op != "" && !ev.Remote {
			events = append(events, ev.Heads)
		}
	})
	defer cancel()
	check := func(what string) {
		t.Helper()
		if got := endedLen(t, e.doc); got != 0 {
			t.Errorf("%s: c.ended holds %d entries", what, got)
		}
	}
	blk := s.Agent("ann").Block("notes")
	// plain append
	if err := blk.Append(ctx, "two\n"); err != nil {
		t.Fatal(err)
	}
	check("append")
	if len(events) != 1 || fmt.Sprint(events[0]) != fmt.Sprint(e.doc.Heads()) {
		t.Errorf("append event heads %v, doc heads %v", events, e.doc.Heads())
	}
	// refused edit: an Append sharee's rewrite
	if err := blk.Share(ctx, "bob", blocks.Append); err != nil {
		t.Fatal(err)
	}
	if err := s.Agent("bob").Shared("ann", "notes").SetText(ctx, "rewritten"); !errors.Is(err, blocks.ErrPermission) {
		t.Fatalf("refused edit: %v", err)
	}
	check("refused edit")
	// failed write
	s.testDecide = func(*sql.Tx) error { return errors.New("no") }
	if err := blk.Append(ctx, "failed\n"); err == nil {
		t.Fatal("the write did not fail")
	}
	s.testDecide = nil
	check("failed write")
	// panicked write
	s.testDecide = func(*sql.Tx) error { panic("boom") }
	func() {
		defer func() { _ = recover() }()
		_ = blk.Append(ctx, "panicked\n")
	}()
	s.testDecide = nil
	check("panicked write")
	if len(events) != 1 {
		t.Errorf("%d events, want 1 (refused, failed and panicked edits fire none)", len(events))
	}
	// rebase
	if err := blk.Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	check("rebase")
	if err := blk.Append(ctx, "after rebase\n"); err != nil {
		t.Fatal(err)
	}
	check("append after rebase")
	if fmt.Sprint(events[len(events)-1]) != fmt.Sprint(e.doc.Heads()) {
		t.Errorf("after rebase event heads %v, doc heads %v", events[len(events)-1], e.doc.Heads())
	}
}

// TestEventHeadsWriteBackAndEpochs: write-back edits, and edits whose
// write starts a new epoch (compaction past HistoryLimit; built behind
// the write), leave nothing recorded for their events, and each event
// names one change: in write-back mode the document's heads after the
// write; with epochs, the change as the write left it (a switch behind
// the write may since have moved the document to a new epoch).
func TestEventHeadsWriteBackAndEpochs(t *testing.T) {
	ctx := context.Background()
	for _, opts := range []*Options{{WriteBack: true}, {CompactAfter: 4, HistoryLimit: 1}} {
		t.Run(fmt.Sprintf("writeback=%v", opts.WriteBack), func(t *testing.T) {
			s, err := Open(ctx, filepath.Join(t.TempDir(), "x.db"), opts)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.CreateBlock(ctx, "ann", BlockSpec{Label: "notes", Value: "one"}); err != nil {
				t.Fatal(err)
			}
			blk := s.Agent("ann").Block("notes")
			if _, err := blk.Doc(ctx); err != nil {
				t.Fatal(err)
			}
			e := s.cachedEntry("ann", "notes")
			var last []string
			var n int
			cancel := e.doc.View("ann", blocks.ReadWrite).Subscribe(func(ev blocks.Event) {
				if ev.Op != "" && !ev.Remote {
					last = ev.Heads
					n++
				}
			})
			defer cancel()
			for i := range 30 {
				if err := blk.SetText(ctx, strings.Repeat(fmt.Sprintf("v%d ", i), 50)); err != nil {
					t.Fatal(err)
				}
				if got := endedLen(t, e.doc); got != 0 {
					t.Fatalf("edit %d: c.ended holds %d", i, got)
				}
				if len(last) != 1 || opts.WriteBack && fmt.Sprint(last) != fmt.Sprint(e.doc.Heads()) {
					t.Fatalf("edit %d: event heads %v, doc heads %v", i, last, e.doc.Heads())
				}
			}
			if n != 30 {
				t.Errorf("%d events", n)
			}
			if !opts.WriteBack {
				if err := s.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if _, ep, _, _ := e.freshness(); ep == 0 {
					t.Errorf("no new epoch started")
				} else {
					t.Logf("epoch %d", ep)
				}
			} else if err := s.Flush(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestEventHeadsUnderContention: agents append to one block at once;
// every edit event names one change, made by that event's actor.
func TestEventHeadsUnderContention(t *testing.T) {
	ctx := context.Background()
	s, _ := openOneBlock(t)
	e := s.cachedEntry("ann", "notes")
	agents := []string{"ann", "bob", "cy"}
	for _, a := range agents[1:] {
		if err := s.Agent("ann").Block("notes").Share(ctx, a, blocks.ReadWrite); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var evs []blocks.Event
	cancel := e.doc.View("ann", blocks.ReadWrite).Subscribe(func(ev blocks.Event) {
		if ev.Op != "" && !ev.Remote {
			mu.Lock()
			evs = append(evs, ev)
			mu.Unlock()
		}
	})
	defer cancel()
	const per = 15
	var wg sync.WaitGroup
	for _, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				var err error
				if a == "ann" {
					err = s.Agent(a).Block("notes").Append(ctx, fmt.Sprintf("%s%d\n", a, i))
				} else {
					err = s.Agent(a).Shared("ann", "notes").Append(ctx, fmt.Sprintf("%s%d\n", a, i))
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	history, err := s.blockHistory(ctx, "ann", "", "notes")
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]string{}
	for _, ch := range history {
		by[ch.Hash] = ch.Actor
	}
	mu.Lock()
	defer mu.Unlock()
	if len(evs) != per*len(agents) {
		t.Errorf("%d events, want %d", len(evs), per*len(agents))
	}
	seen := map[string]bool{}
	for _, ev := range evs {
		if len(ev.Heads) != 1 || by[ev.Heads[0]] != ev.Actor || seen[ev.Heads[0]] {
			t.Errorf("event by %s names %v (actor %q, seen %v)", ev.Actor, ev.Heads, by[ev.Heads[0]], seen[ev.Heads[0]])
		}
		seen[ev.Heads[0]] = true
	}
	if got := endedLen(t, e.doc); got != 0 {
		t.Errorf("c.ended holds %d", got)
	}
}
