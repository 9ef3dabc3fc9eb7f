package memory_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

func epochOf(t *testing.T, c *memory.Store, owner, label string) (epoch, archived, updates int) {
	t.Helper()
	if err := c.Flush(context.Background()); err != nil { // the epochs started behind the writes
		t.Fatal(err)
	}
	err := storeaccess.Backend(c).DB().QueryRow(`SELECT b.epoch, (SELECT count(*) FROM block_archive a WHERE a.block_id = b.id),
		(SELECT count(*) FROM block_updates u WHERE u.block_id = b.id) FROM blocks b WHERE owner = ? AND label = ?`, owner, label).Scan(&epoch, &archived, &updates)
	if err != nil {
		t.Fatal(err)
	}
	return epoch, archived, updates
}

// rewrite sets line i%len(lines) of the block to a new value, as a whole
// text write (the store diffs it into a one-line change).
func rewrite(t *testing.T, c *memory.Store, lines []string, i int) string {
	t.Helper()
	// The whole line changes (not a digit or two): the history of a block
	// rewritten this way costs many times its text to load.
	lines[i%len(lines)] = fmt.Sprintf("line %d: rewrite %d %016x", i%len(lines), i, uint64(i+1)*0x9E3779B97F4A7C15)
	text := strings.Join(lines, "\n")
	if err := c.Agent("a").Block("notes").SetText(context.Background(), text); err != nil {
		t.Fatal(err)
	}
	return text
}

// A block rewritten past Options.HistoryLimit starts new epochs on its
// own; its value, views, history and as-of views survive every switch.
func TestEpochsByCompaction(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "e.db")
	c := openFile(t, path, &memory.Options{CompactAfter: 8, HistoryLimit: 1})
	lines := make([]string, 3)
	for i := range lines {
		lines[i] = fmt.Sprintf("line %d", i)
	}
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: strings.Join(lines, "\n")}); err != nil {
		t.Fatal(err)
	}
	view, err := c.Agent("a").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	texts := map[string]string{} // change hash → text after it
	var text string
	for i := range 60 {
		text = rewrite(t, c, lines, i)
		// Settled after each write: a new epoch is started behind the write
		// that found it due, and one started meanwhile would fold the next
		// writes into its first changes (TestRebaseCatchesUpWithWrites).
		if err := c.Flush(ctx); err != nil {
			t.Fatal(err)
		}
		texts[view.Heads()[0]] = text
	}
	epoch, archived, updates := epochOf(t, c, "a", "notes")
	if epoch < 3 || archived != epoch || updates >= 8 {
		t.Fatalf("epoch %d, %d archived, %d update rows: want several epochs, each archived, and few updates", epoch, archived, updates)
	}
	if got := view.Render(); got != text {
		t.Fatalf("the view held since the start reads %q, want %q", got, text)
	}
	if r, _ := c.Agent("a").Block("notes").Render(ctx); r != text {
		t.Fatalf("stored rendering %q, want %q", r, text)
	}
	// The old view still writes, on the current epoch.
	if err := view.AppendText("\ntail", blocks.Agent); err != nil {
		t.Fatal(err)
	}
	text += "\ntail"

	h, err := c.Agent("a").Block("notes").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rebases, last := 0, int64(-1)
	for _, ch := range h {
		if ch.Epoch < last {
			t.Fatalf("history goes back from epoch %d to %d", last, ch.Epoch)
		}
		last = ch.Epoch
		if ch.Op == blocks.OpRebase {
			rebases++
		}
	}
	// create, initial value, 60 rewrites, the append, and one rebase change
	// per epoch.
	if want := 63 + epoch; len(h) != want || rebases != epoch || last != int64(epoch) {
		t.Fatalf("history has %d changes (%d rebases, last epoch %d), want %d (%d)", len(h), rebases, last, want, epoch)
	}
	// As-of views reach into archived epochs.
	checked := 0
	for _, ch := range h {
		want, ok := texts[ch.Hash]
		if !ok || ch.Epoch == int64(epoch) {
			continue
		}
		at, err := c.Agent("a").Block("notes").At(ctx, []string{ch.Hash})
		if err != nil {
			t.Fatalf("as of %s (epoch %d): %v", ch.Hash, ch.Epoch, err)
		}
		if got := at.Render(); got != want {
			t.Fatalf("as of %s (epoch %d): %q, want %q", ch.Hash, ch.Epoch, got, want)
		}
		if err := at.AppendText("x", blocks.Agent); !errors.Is(err, blocks.ErrHistorical) {
			t.Fatalf("writing an as-of view: %v, want ErrHistorical", err)
		}
		checked++
	}
	if checked < 10 {
		t.Fatalf("only %d as-of views in archived epochs were checked", checked)
	}
	if _, err := c.Agent("a").Block("notes").At(ctx, []string{strings.Repeat("ab", 32)}); !errors.Is(err, blocks.ErrOutOfRange) {
		t.Fatalf("as of an unknown change: %v, want ErrOutOfRange", err)
	}

	// A cold load reads only the current epoch, and reads the same text.
	c2 := openFile(t, path, nil)
	doc, err := c2.Agent("a").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := doc.Render(); got != text {
		t.Fatalf("cold load reads %q, want %q", got, text)
	}
	dh, err := doc.History()
	if err != nil {
		t.Fatal(err)
	}
	if len(dh) > 8+2 {
		t.Fatalf("the loaded document holds %d changes: its history was not bounded", len(dh))
	}
}

// An append-only block's history is mostly its content: no epoch, also
// when its rendering shows only part of it (a viewport), and also when the
// appends are a line each (their changes' own bytes outweigh the text, but
// cost little to load). Appends of a character each are another matter:
// there loading the changes costs many times loading the text.
func TestEpochsLeaveGrowingBlocksAlone(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "g.db"), &memory.Options{CompactAfter: 8, HistoryLimit: 1})
	long := func(i int) string { return strings.Repeat(fmt.Sprintf("entry %d, ", i), 40) + "\n" }
	for _, tc := range []struct {
		spec    memory.BlockSpec
		line    func(i int) string
		rebased bool
	}{
		{memory.BlockSpec{Label: "notes", CharLimit: blocks.MaxCharLimit}, long, false},
		{memory.BlockSpec{Label: "window", CharLimit: blocks.MaxCharLimit, Schema: schema.Text{Viewport: &schema.Viewport{Start: 1, Lines: 3}}}, long, false},
		{memory.BlockSpec{Label: "log", CharLimit: blocks.MaxCharLimit}, func(i int) string { return fmt.Sprintf("one more line %6d\n", i) }, false},
		{memory.BlockSpec{Label: "cjk", CharLimit: blocks.MaxCharLimit}, func(i int) string { return fmt.Sprintf("記憶の断片を追記する %d\n", i) }, false},
		{memory.BlockSpec{Label: "chars", CharLimit: blocks.MaxCharLimit}, func(int) string { return "x" }, true},
	} {
		if _, err := c.Agent("a").CreateBlock(ctx, tc.spec); err != nil {
			t.Fatal(err)
		}
		for i := range 60 {
			if err := c.Agent("a").Block(tc.spec.Label).Append(ctx, tc.line(i)); err != nil {
				t.Fatal(err)
			}
		}
		if epoch, _, _ := epochOf(t, c, "a", tc.spec.Label); (epoch > 0) != tc.rebased {
			t.Errorf("append-only block %q was rebased %d times, want rebased: %v", tc.spec.Label, epoch, tc.rebased)
		}
	}
}

// A compaction racing another store's rebase never saves one epoch's
// document as another's snapshot (which would lose every later write).
func TestCompactRacingRebase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "r.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	d0, err := createBlockDoc(ctx, a.Agent("a"), memory.BlockSpec{Label: "notes", Value: "one\ntwo"})
	if err != nil {
		t.Fatal(err)
	}
	info := d0.Info()
	rounds := 300 / raceScale
	for round := range rounds {
		done := make(chan struct{})
		go func() {
			defer close(done)
			time.Sleep(time.Duration(round%7) * 50 * time.Microsecond)
			if err := b.Agent("a").Block("notes").Rebase(ctx); err != nil {
				t.Error(err)
			}
		}()
		_ = a.Agent("a").Block("notes").Compact(ctx) // may fail with "retry": never silently wrong
		<-done
		var epoch int
		var snap []byte
		if err := storeaccess.Backend(a).DB().QueryRow(`SELECT b.epoch, s.snapshot FROM blocks b JOIN block_snapshots s ON s.block_id = b.id WHERE b.owner = 'a' AND b.label = 'notes'`).Scan(&epoch, &snap); err != nil {
			t.Fatal(err)
		}
		doc, err := blocks.Load(info, snap, nil)
		if err != nil {
			t.Fatal(err)
		}
		if h, _ := doc.History(); h[0].Op != blocks.OpRebase {
			t.Fatalf("round %d: epoch %d's snapshot starts with %s: another epoch's document", round, epoch, h[0].Op)
		}
	}
	if err := b.Agent("a").Block("notes").Append(ctx, "\nX"); err != nil {
		t.Fatal(err)
	}
	cold := openFile(t, path, nil)
	if r, err := cold.Agent("a").Block("notes").Doc(ctx); err != nil || r.Render() != "one\ntwo\nX" {
		t.Fatalf("a cold store reads %v (%v)", r, err)
	}
}

// Write-back edits carried over an epoch switch survive a refresh that
// fails right after the switch (here the caller's context ends).
func TestCarriedEditsSurviveAFailedRefresh(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	a := openFile(t, path, nil)
	wb := openFile(t, path, &memory.Options{WriteBack: true})
	if _, err := a.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one\ntwo\nthree"}); err != nil {
		t.Fatal(err)
	}
	if err := wb.Agent("a").Block("notes").SetText(ctx, "one\ntwo\nTHREE"); err != nil {
		t.Fatal(err)
	}
	wdoc, err := wb.Agent("a").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("a").Block("notes").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("a").Block("notes").SetText(ctx, "ONE\ntwo\nthree"); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	stop := wdoc.Subscribe(func(ev blocks.Event) {
		if ev.Remote {
			cancel()
		}
	})
	_, _ = wb.Agent("a").Block("notes").Doc(cctx) // switches, then fails
	stop()
	if err := wb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := a.Agent("a").Block("notes").Render(ctx); r != "ONE\ntwo\nTHREE" {
		t.Fatalf("after the flush the block reads %q, want both edits once", r)
	}
}

// Two stores on one file: one rebases, the other's cached document and
// views switch on their next access; unflushed write-back edits are
// re-applied once; an external peer's changes from the old epoch are
// refused, whole document or incremental, and change nothing.
func TestEpochSwitchAcrossStores(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	wb := openFile(t, path, &memory.Options{WriteBack: true})
	if _, err := a.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "one\ntwo\nthree"}); err != nil {
		t.Fatal(err)
	}
	bview, err := b.Agent("a").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peer, err := bview.Fork() // an automerge peer holding the epoch-0 document
	if err != nil {
		t.Fatal(err)
	}
	// The write-back store edits the last line and does not flush.
	if err := wb.Agent("a").Block("notes").SetText(ctx, "one\ntwo\nTHREE"); err != nil {
		t.Fatal(err)
	}
	// Store a edits the first line and rebases.
	if err := a.Agent("a").Block("notes").SetText(ctx, "ONE\ntwo\nthree"); err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("a").Block("notes").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	if epoch, archived, updates := epochOf(t, a, "a", "notes"); epoch != 1 || archived != 1 || updates != 0 {
		t.Fatalf("after Rebase: epoch %d, %d archived, %d updates", epoch, archived, updates)
	}
	// b's old view writes; b reads the new epoch.
	if err := bview.AppendText("\nfour", blocks.Agent); err != nil {
		t.Fatal(err)
	}
	if got := bview.Render(); got != "ONE\ntwo\nthree\nfour" {
		t.Fatalf("b reads %q", got)
	}
	// The write-back edit is re-applied on the new epoch, once.
	if err := wb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	want := "ONE\ntwo\nTHREE\nfour"
	for name, s := range map[string]*memory.Store{"a": a, "b": b, "wb": wb} {
		doc, err := s.Agent("a").Block("notes").Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := doc.Render(); got != want {
			t.Fatalf("store %s reads %q, want %q", name, got, want)
		}
	}
	// The old-epoch peer is refused with a clear error.
	if err := peer.AppendText("\nfrom the peer", blocks.Agent); err != nil {
		t.Fatal(err)
	}
	whole, err := peer.Save()
	if err != nil {
		t.Fatal(err)
	}
	err = a.Agent("a").Block("notes").Merge(ctx, whole)
	if !errors.Is(err, blocks.ErrUnrelated) || !strings.Contains(err.Error(), "rebased") {
		t.Fatalf("merging the old epoch's document: %v, want ErrUnrelated naming the rebase", err)
	}
	inc, _, err := peer.PendingChanges()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("a").Block("notes").Merge(ctx, inc); err == nil || !strings.Contains(err.Error(), "epoch") {
		t.Fatalf("merging the old epoch's change: %v, want an error naming the epoch", err)
	}
	if r, _ := a.Agent("a").Block("notes").Render(ctx); r != want {
		t.Fatalf("a refused merge changed the block: %q", r)
	}
	// The history spans both epochs.
	h, err := b.Agent("a").Block("notes").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if h[0].Op != blocks.OpCreate || h[0].Epoch != 0 || h[len(h)-1].Epoch != 1 {
		t.Fatalf("history %+v does not span epochs 0 and 1", h)
	}
}
