package memory_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
	"github.com/engram-go/engram/search"
)

func openFile(t testing.TB, path string, opts *memory.Options) *memory.Store {
	t.Helper()
	c, err := memory.Open(context.Background(), fresh(path), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// Eviction never loses an unpersisted change, in write-back mode too.
func TestEvictionKeepsWriteBackChanges(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wb.db")
	c, err := memory.Open(ctx, fresh(path), &memory.Options{CacheSize: 2, WriteBack: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 6; i++ {
		label := fmt.Sprintf("b%d", i)
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: label}); err != nil {
			t.Fatal(err)
		}
		if err := c.Agent("a").Block(label).Append(ctx, "v1 "+label); err != nil {
			t.Fatal(err)
		}
	}
	// Write-back: b5 is still only in memory (it was never evicted), which
	// another Store on the file shows; this one reads its own writes.
	durable := openFile(t, path, nil)
	if r, _ := durable.Agent("a").Block("b5").Render(ctx); r != "" {
		t.Fatalf("write-back persisted early: %q", r)
	}
	if r, _ := c.Agent("a").Block("b5").Render(ctx); r != "v1 b5" {
		t.Fatalf("write-back Store does not read its own write: %q", r)
	}
	// b0..b3 were evicted by later loads and flushed on eviction.
	if r, _ := durable.Agent("a").Block("b0").Render(ctx); r != "v1 b0" {
		t.Fatalf("evicted block lost its change: %q", r)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	c2 := openFile(t, path, nil)
	for i := 0; i < 6; i++ {
		label := fmt.Sprintf("b%d", i)
		if r, _ := c2.Agent("a").Block(label).Render(ctx); r != "v1 "+label {
			t.Fatalf("%s after close = %q", label, r)
		}
	}
}

func TestWriteBackPersistBlock(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "wb.db")
	c := openFile(t, path, &memory.Options{WriteBack: true})
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "n"}); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("n").Append(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	durable := openFile(t, path, nil)
	if r, _ := durable.Agent("a").Block("n").Render(ctx); r != "" {
		t.Fatalf("persisted before PersistBlock: %q", r)
	}
	if err := c.Agent("a").Block("n").Persist(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := durable.Agent("a").Block("n").Render(ctx); r != "x" {
		t.Fatalf("after PersistBlock: %q", r)
	}
}

// Two Caches on one file (as two processes would be): each sees the
// other's writes on the next read, and metadata changes propagate.
func TestTwoCachesOneFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "two.db")
	a := openFile(t, path, nil)
	b := openFile(t, path, nil)
	if _, err := a.Agent("x").CreateBlock(ctx, memory.BlockSpec{Label: "n", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("x").Block("n").Append(ctx, "from a;"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Agent("x").Block("n").Doc(ctx); err != nil { // b loads it cold
		t.Fatal(err)
	}
	if err := b.Agent("x").Block("n").Append(ctx, "from b;"); err != nil {
		t.Fatal(err)
	}
	if err := a.Agent("x").Block("n").Append(ctx, "a again;"); err != nil {
		t.Fatal(err)
	}
	da, _ := a.Agent("x").Block("n").Doc(ctx)
	db, _ := b.Agent("x").Block("n").Doc(ctx)
	ta, _ := da.Text()
	tb, _ := db.Text()
	if ta != tb || ta != "from a;from b;a again;" {
		t.Fatalf("caches disagree: %q vs %q", ta, tb)
	}
	if err := a.Agent("x").Block("n").SetPinned(ctx, true); err != nil {
		t.Fatal(err)
	}
	db, _ = b.Agent("x").Block("n").Doc(ctx)
	if !db.Info().Pinned {
		t.Fatal("metadata change not seen by the other cache")
	}
	if err := a.Agent("x").Block("n").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Agent("x").Block("n").Doc(ctx); err == nil {
		t.Fatal("deleted block still served by the other cache")
	}
}

// Compaction folds updates into the snapshot; a reader that had not seen
// the folded updates still catches up.
func TestCompaction(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "compact.db")
	a := openFile(t, path, &memory.Options{CompactAfter: 10})
	b := openFile(t, path, nil)
	if _, err := a.Agent("x").CreateBlock(ctx, memory.BlockSpec{Label: "n", CharLimit: 100000}); err != nil {
		t.Fatal(err)
	}
	if err := b.Agent("x").Block("n").Append(ctx, "b0;"); err != nil { // b caches it at seq 1
		t.Fatal(err)
	}
	for i := 0; i < 25; i++ {
		if err := a.Agent("x").Block("n").Append(ctx, fmt.Sprintf("a%d;", i)); err != nil {
			t.Fatal(err)
		}
	}
	var updates, snapSeq int
	storeaccess.Backend(a).DB().QueryRow(`SELECT count(*) FROM block_updates`).Scan(&updates)
	storeaccess.Backend(a).DB().QueryRow(`SELECT snapshot_seq FROM blocks`).Scan(&snapSeq)
	if updates >= 10 || snapSeq == 0 {
		t.Fatalf("not compacted: %d updates, snapshot_seq %d", updates, snapSeq)
	}
	d, err := b.Agent("x").Block("n").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	text, _ := d.Text()
	want := "b0;"
	for i := 0; i < 25; i++ {
		want += fmt.Sprintf("a%d;", i)
	}
	if text != want {
		t.Fatalf("after compaction b sees %q", text)
	}
	if err := a.Agent("x").Block("n").Compact(ctx); err != nil {
		t.Fatal(err)
	}
	storeaccess.Backend(a).DB().QueryRow(`SELECT count(*) FROM block_updates`).Scan(&updates)
	if updates != 0 {
		t.Fatalf("%d updates left after Compact", updates)
	}
	c := openFile(t, path, nil)
	r, _ := c.Agent("x").Block("n").Render(ctx)
	d2, _ := c.Agent("x").Block("n").Doc(ctx)
	t2, _ := d2.Text()
	if r != want || t2 != want {
		t.Fatalf("reopened: rendered %q, doc %q", r, t2)
	}
}

// A large block is compacted less often, in proportion to its size (one
// update per 128 characters), so saving its snapshot does not dominate the
// cost of an append; a small one still every CompactAfter updates.
func TestCompactionScalesWithSize(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "scale.db"), &memory.Options{CompactAfter: 10})
	cases := []struct {
		label       string
		size        int
		appends     int
		wantCompact bool
	}{
		{"small", 100, 12, true},         // max(10, 0) = 10 updates
		{"large", 12_800, 50, false},     // max(10, 100) = 100 updates
		{"large-due", 12_800, 110, true}, // past 100 + its own growth/128
	}
	for _, tc := range cases {
		t.Run(tc.label, func(t *testing.T) {
			if _, err := c.Agent("x").CreateBlock(ctx, memory.BlockSpec{Label: tc.label, CharLimit: blocks.MaxCharLimit,
				Value: strings.Repeat("x", tc.size)}); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < tc.appends; i++ {
				if err := c.Agent("x").Block(tc.label).Append(ctx, "y"); err != nil {
					t.Fatal(err)
				}
			}
			var snapSeq int
			storeaccess.Backend(c).DB().QueryRow(`SELECT snapshot_seq FROM blocks WHERE label = ?`, tc.label).Scan(&snapSeq)
			if got := snapSeq > 0; got != tc.wantCompact {
				t.Fatalf("%d-char block after %d appends: snapshot_seq %d, want compacted = %v", tc.size, tc.appends, snapSeq, tc.wantCompact)
			}
			r, err := c.Agent("x").Block(tc.label).Render(ctx)
			if err != nil || r != strings.Repeat("x", tc.size)+strings.Repeat("y", tc.appends) {
				t.Fatalf("rendered %d chars, err %v", len(r), err)
			}
		})
	}
}

// Only incremental changes are written per commit: an append to a large
// block stores a small update row, not the block.
func TestUpdatesAreIncremental(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "inc.db"), nil)
	if _, err := c.Agent("x").CreateBlock(ctx, memory.BlockSpec{Label: "n", Value: strings.Repeat("lorem ipsum ", 400)}); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("x").Block("n").Append(ctx, "!"); err != nil {
		t.Fatal(err)
	}
	var n int
	storeaccess.Backend(c).DB().QueryRow(`SELECT length(data) FROM block_updates ORDER BY seq DESC LIMIT 1`).Scan(&n)
	if n == 0 || n > 400 {
		t.Fatalf("update row is %d bytes for a one-character append", n)
	}
}

func TestOpenRefusesNewerDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "new.db")
	c := openFile(t, path, nil)
	if _, err := storeaccess.Backend(c).DB().Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := memory.Open(ctx, fresh(path), nil); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("Open of a newer database: %v", err)
	}
}

func TestClosedStore(t *testing.T) {
	ctx := context.Background()
	c, err := memory.Open(ctx, ":memory:", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := c.Agent("a").Blocks(ctx); err != memory.ErrClosed {
		t.Fatalf("after Close: %v", err)
	}
}

func TestLogRotationToArchival(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "log.db"), nil)
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "events", Type: blocks.Log, Permission: blocks.Append,
		Schema: schema.Log{Retention: 3}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if err := c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: fmt.Sprintf("event %d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	d, _ := c.Agent("a").Block("events").Doc(ctx)
	entries, _ := d.LogEntries(0)
	if len(entries) != 3 || entries[0].Message != "event 4" {
		t.Fatalf("entries kept = %+v", entries)
	}
	arch, _ := c.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"log:events"}})
	if len(arch) != 2 || arch[1].Content != "event 0" {
		t.Fatalf("rotated entries = %+v", arch)
	}
}

// The trim and the rotated entries' archival rows commit together, and an
// append that committed is acknowledged even when the rotation after it
// cannot run: here the caller's context ends the moment the append is
// durable. Before, the trim committed alone, the archival inserts then
// failed on the ended context (every trimmed entry lost), and the durable
// append was reported failed (a retrying agent wrote it twice).
func TestLogRotationIsAtomic(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "log.db")
	c := openFile(t, path, &memory.Options{Embedder: search.NewOffline(32)})
	doc, err := createBlockDoc(ctx, c.Agent("a"), memory.BlockSpec{Label: "events", Type: blocks.Log, Schema: schema.Log{Retention: 2}})
	if err != nil {
		t.Fatal(err)
	}
	appendEntry := func(ctx context.Context, msg string) error {
		return c.Agent("a").Block("events").Apply(ctx, memory.Edit{Op: blocks.OpAppendLogEntry, Text: msg})
	}
	for _, m := range []string{"first", "second"} {
		if err := appendEntry(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	unsub := doc.Subscribe(func(ev blocks.Event) {
		if ev.Op == blocks.OpAppendLogEntry {
			cancel() // the caller gives up just after its append committed
		}
	})
	if err := appendEntry(cctx, "third"); err != nil {
		t.Fatalf("the append committed, but ApplyEdit says %v", err)
	}
	unsub()
	if err := appendEntry(ctx, "fourth"); err != nil { // rotates what the third could not
		t.Fatal(err)
	}
	c.Close()

	c = openFile(t, path, &memory.Options{Embedder: search.NewOffline(32)})
	d, err := c.Agent("a").Block("events").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := d.LogEntries(0)
	arch, _ := c.Agent("a").Archival().List(ctx, &memory.ArchivalQuery{Tags: []string{"log:events"}})
	seen := map[string]int{}
	for _, e := range entries {
		seen[e.Message]++
	}
	for _, e := range arch {
		seen[e.Content]++
	}
	for _, m := range []string{"first", "second", "third", "fourth"} {
		if seen[m] != 1 {
			t.Errorf("entry %q is in the block or archival %d times, want once (block %+v, archival %d rows)", m, seen[m], entries, len(arch))
		}
	}
	if len(entries) != 2 {
		t.Errorf("block keeps %d entries, retention 2", len(entries))
	}
	// The rotated entries were embedded: vector search finds them.
	res, err := c.Agent("a").Archival().Search(ctx, "first", search.NewOptions().Mode(search.Vector).Limit(10))
	if err != nil || len(res) != 2 {
		t.Errorf("vector search over the rotated entries: %d results, %v", len(res), err)
	}
}

func TestEmbedderMismatchNeedsReembed(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "emb.db")
	c := openFile(t, path, &memory.Options{Embedder: search.NewOffline(32)})
	if _, err := c.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "tomatoes in the garden"}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	if _, err := memory.Open(ctx, fresh(path), &memory.Options{Embedder: search.NewOffline(64)}); !errors.Is(err, search.ErrEmbedderMismatch) {
		t.Fatalf("open with another embedder: %v", err)
	}
	c2 := openFile(t, path, &memory.Options{Embedder: search.NewOffline(64), OpenForReembed: true})
	if _, err := c2.Agent("a").Search(ctx, "tomatoes", search.NewOptions().Mode(search.Vector)); !errors.Is(err, search.ErrEmbedderMismatch) {
		t.Fatalf("vector search before reembed: %v", err)
	}
	var calls int
	if err := c2.Reembed(ctx, func(done, total int) { calls++ }); err != nil {
		t.Fatal(err)
	}
	res, err := c2.Agent("a").Search(ctx, "tomatoes", search.NewOptions().Mode(search.Vector))
	if err != nil || len(res) != 1 || calls == 0 {
		t.Fatalf("after reembed: %v %v (progress calls %d)", res, err, calls)
	}
	c2.Close()
	c3 := openFile(t, path, &memory.Options{Embedder: search.NewOffline(64)})
	if _, err := c3.Agent("a").Search(ctx, "garden", search.NewOptions().Mode(search.Hybrid)); err != nil {
		t.Fatal(err)
	}
}

// Block text is indexed lazily: writes mark the block dirty, the next search
// re-indexes it once and sees only the current text.
func TestDeferredBlockIndex(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "fts.db"), nil)
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "n", Value: "apples", Permission: blocks.Admin}); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{" bananas", " cherries"} {
		if err := c.Agent("a").Block("n").Append(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Agent("a").Block("n").SetText(ctx, "dates only"); err != nil {
		t.Fatal(err)
	}
	var dirty int
	storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM fts_blocks_dirty`).Scan(&dirty)
	if dirty != 1 {
		t.Fatalf("dirty rows = %d, want 1 (coalesced)", dirty)
	}
	fts := search.NewOptions().Mode(search.FTS)
	if res, _ := c.Agent("a").Search(ctx, "apples", fts); len(res) != 0 {
		t.Fatalf("old text still found: %+v", res)
	}
	if res, _ := c.Agent("a").Search(ctx, "dates", fts); len(res) != 1 {
		t.Fatalf("new text not found: %+v", res)
	}
	storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM fts_blocks_dirty`).Scan(&dirty)
	if dirty != 0 {
		t.Fatalf("dirty rows after search = %d", dirty)
	}
	if _, err := storeaccess.Backend(c).DB().Exec(`INSERT INTO fts_blocks (fts_blocks) VALUES ('integrity-check')`); err != nil {
		t.Fatalf("integrity-check: %v", err)
	}
	if err := c.Agent("a").Block("n").Append(ctx, " elderberries"); err != nil {
		t.Fatal(err)
	}
	// Deleting a block whose latest text is not indexed yet removes what was.
	if err := c.Agent("a").Block("n").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	if res, _ := c.Agent("a").Search(ctx, "dates elderberries", fts); len(res) != 0 {
		t.Fatalf("deleted block found: %+v", res)
	}
	if _, err := storeaccess.Backend(c).DB().Exec(`INSERT INTO fts_blocks (fts_blocks) VALUES ('integrity-check')`); err != nil {
		t.Fatalf("integrity-check after delete: %v", err)
	}
}

// Edits pending in write-back mode survive a refused merge: the rollback
// replaces the document by a fork with a new automerge actor, and the
// earlier edits (made under the old actor) are still this replica's to
// persist. They were silently dropped before.
func TestWriteBackEditsSurviveARefusedMerge(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "p.db")
	wb := openFile(t, path, &memory.Options{WriteBack: true})
	if _, err := wb.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "n", Value: "base", CharLimit: 100}); err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	doc, _ := wb.Agent("a").Block("n").Doc(ctx)
	fork, _ := doc.Fork()
	if err := wb.Agent("a").Block("n").Append(ctx, " pending"); err != nil {
		t.Fatal(err)
	}
	if err := fork.SetText(strings.Repeat("x", 95), blocks.System); err != nil {
		t.Fatal(err)
	}
	data, _ := fork.Save()
	if err := wb.Agent("a").Block("n").Merge(ctx, data); !errors.Is(err, blocks.ErrLimit) {
		t.Fatalf("merge past the limit: %v, want ErrLimit", err)
	}
	if err := wb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	other := openFile(t, path, nil)
	if r, _ := other.Agent("a").Block("n").Render(ctx); r != "base pending" {
		t.Fatalf("the pending write-back edit was lost: %q", r)
	}
}

// A merge in write-back mode is written through: its changes are not the
// replica's own, so a later persist (which writes only those) never stored
// them, and every later edit depended on a change no other reader had.
func TestWriteBackMergeIsPersisted(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	wb := openFile(t, path, &memory.Options{WriteBack: true})
	doc, err := createBlockDoc(ctx, wb.Agent("a"), memory.BlockSpec{Label: "n", Value: "base"})
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	peer, err := doc.Fork()
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.Agent("a").Block("n").Append(ctx, " pending"); err != nil {
		t.Fatal(err)
	}
	if err := peer.SetText("BASE", blocks.System); err != nil {
		t.Fatal(err)
	}
	data, err := peer.Save()
	if err != nil {
		t.Fatal(err)
	}
	if err := wb.Agent("a").Block("n").Merge(ctx, data); err != nil {
		t.Fatal(err)
	}
	if err := wb.Agent("a").Block("n").Append(ctx, " mine"); err != nil {
		t.Fatal(err)
	}
	if err := wb.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	other := openFile(t, path, nil)
	got, err := other.Agent("a").Block("n").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if r := got.Render(); r != "BASE pending mine" {
		t.Fatalf("another store loads %q, want the merge and both edits", r)
	}
	h, err := other.Agent("a").Block("n").History(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 5 { // create, initial value, pending, the peer's, mine
		t.Fatalf("history has %d changes, want 5", len(h))
	}
}

// A write reuses its process's cached block without a freshness query;
// the write transaction still decides on the fresh row. Each case: store
// a caches the block, store b changes it, then a writes through its cached
// entry, and the result must be what a fresh store would do.
func TestWritesThroughACachedBlockThatIsBehind(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name    string
		perm    blocks.Permission // the block's permission when a caches it
		other   func(b *memory.Store) error
		wantErr error  // a's append "+a"
		want    string // the block afterwards, read by a fresh store
	}{
		{"another writer's append", blocks.ReadWrite,
			func(b *memory.Store) error { return b.Agent("x").Block("n").Append(ctx, "+b") },
			nil, "0123456789+b+a"},
		{"limit reached by another writer", blocks.ReadWrite,
			func(b *memory.Store) error { return b.Agent("x").Block("n").Append(ctx, strings.Repeat("b", 29)) },
			blocks.ErrLimit, "0123456789" + strings.Repeat("b", 29)},
		{"made read-only elsewhere", blocks.Admin,
			func(b *memory.Store) error { return b.Agent("x").Block("n").SetPermission(ctx, blocks.ReadOnly) },
			blocks.ErrPermission, "0123456789"},
		{"made append-only elsewhere", blocks.Admin,
			func(b *memory.Store) error { return b.Agent("x").Block("n").SetPermission(ctx, blocks.Append) },
			nil, "0123456789+a"},
		{"deleted and made again elsewhere", blocks.Admin,
			func(b *memory.Store) error {
				if err := b.Agent("x").Block("n").Delete(ctx); err != nil {
					return err
				}
				_, err := b.Agent("x").CreateBlock(ctx, memory.BlockSpec{Label: "n", Value: "new", CharLimit: 40})
				return err
			},
			nil, "new+a"},
		{"deleted elsewhere", blocks.Admin,
			func(b *memory.Store) error { return b.Agent("x").Block("n").Delete(ctx) },
			memory.ErrNotFound, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "behind.db")
			a := openFile(t, path, nil)
			b := openFile(t, path, nil)
			if _, err := a.Agent("x").CreateBlock(ctx, memory.BlockSpec{Label: "n", Value: "0123456789", CharLimit: 40, Permission: tc.perm}); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Agent("x").Block("n").Doc(ctx); err != nil { // a caches it
				t.Fatal(err)
			}
			if err := tc.other(b); err != nil {
				t.Fatal(err)
			}
			err := a.Agent("x").Block("n").Append(ctx, "+a")
			if (tc.wantErr == nil) != (err == nil) || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
				t.Fatalf("append: %v, want %v", err, tc.wantErr)
			}
			if tc.want == "" {
				return
			}
			fresh := openFile(t, path, nil)
			for name, s := range map[string]*memory.Store{"a": a, "fresh": fresh} {
				got, err := s.Agent("x").Block("n").Render(ctx)
				if err != nil || got != tc.want {
					t.Fatalf("store %s reads %q (%v), want %q", name, got, err, tc.want)
				}
				d, err := s.Agent("x").Block("n").Doc(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if text, _ := d.Text(); text != tc.want {
					t.Fatalf("store %s's document holds %q, want %q", name, text, tc.want)
				}
			}
		})
	}
}

// A large block's row keeps slack (blocks.pad) so that small changes to
// its rendering leave the row's size alone and SQLite rewrites only the
// pages that changed: an append to a 100k-character block writes a few
// pages to the WAL, not the whole rendering. Readers never see the pad,
// and it stays bounded whatever the edits do to the block's size.
func TestLargeBlockRowKeepsItsSize(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pad.db")
	c := openFile(t, path, nil)
	line := "one more line of the deploy notes, with a reason\n"
	body := strings.Repeat(line, 100_000/len(line))
	if _, err := c.Agent("x").CreateBlock(ctx, memory.BlockSpec{Label: "big", CharLimit: blocks.MaxCharLimit, Value: body}); err != nil {
		t.Fatal(err)
	}
	want := body
	appendLine := func(s string) {
		t.Helper()
		if err := c.Agent("x").Block("big").Append(ctx, s); err != nil {
			t.Fatal(err)
		}
		want += s
	}
	walSize := func() int64 {
		st, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	appendLine("the first append makes the slack\n")
	before := walSize()
	const n = 20
	for i := range n {
		appendLine(fmt.Sprintf("line %d of what happened today\n", i))
	}
	if per := (walSize() - before) / n; per > 40<<10 {
		t.Errorf("an append to a %d-byte block wrote %d bytes to the WAL: the row was rewritten", len(want), per)
	}
	checkPad := func(what string) {
		t.Helper()
		got, err := c.Agent("x").Block("big").Render(ctx)
		if err != nil || got != want {
			t.Fatalf("%s: rendering %d bytes (%v), want %d", what, len(got), err, len(want))
		}
		var pad sql.NullInt64
		if err := storeaccess.Backend(c).DB().QueryRow(`SELECT octet_length(pad) FROM blocks WHERE label = 'big'`).Scan(&pad); err != nil {
			t.Fatal(err)
		}
		if limit := int64(len(want)/4 + 4096); pad.Int64 > limit {
			t.Fatalf("%s: pad %d bytes, more than %d", what, pad.Int64, limit)
		}
	}
	checkPad("after appends")
	// Shrinking a little keeps the row's size (the pad grows); shrinking a
	// lot makes a new, smaller pad; shrinking below padFrom drops it.
	for _, cut := range []int{len(want) - 200, len(want) / 3, 2000} {
		if err := c.Agent("x").Block("big").SetText(ctx, want[:cut]); err != nil {
			t.Fatal(err)
		}
		want = want[:cut]
		checkPad(fmt.Sprintf("cut to %d", cut))
	}
	fresh := openFile(t, path, nil)
	d, err := fresh.Agent("x").Block("big").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if text, _ := d.Text(); text != want {
		t.Fatalf("a fresh store loads %d bytes, want %d", len(text), len(want))
	}
}

// check_item takes a boolean; anything else (a JSON-built edit's "true", a
// missing value) is refused and changes nothing, instead of unchecking.
func TestCheckItemNeedsABoolean(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "check.db"), nil)
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "todo", Schema: schema.List{Checkbox: true}, Value: []any{"task"}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("todo").Apply(ctx, memory.Edit{Op: blocks.OpCheckItem, Index: 0, Value: true}); err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{"true", "false", nil, 1, 0.0} {
		err := c.Agent("a").Block("todo").Apply(ctx, memory.Edit{Op: blocks.OpCheckItem, Index: 0, Value: v})
		if !errors.Is(err, schema.ErrInvalid) {
			t.Errorf("check_item with value %#v: err = %v, want schema.ErrInvalid", v, err)
		}
	}
	if r, _ := c.Agent("a").Block("todo").Render(ctx); !strings.Contains(r, "[x] task") {
		t.Fatalf("after refused check_items the list renders %q", r)
	}
}

// Text that cannot be stored as written (invalid UTF-8, NUL) is refused
// with ErrInvalidArgument on every backend, instead of coming back changed
// (JSON replaced invalid bytes in tags and metadata) or failing with a raw
// PostgreSQL error. Nothing is written.
func TestUnstorableTextIsRefused(t *testing.T) {
	ctx := context.Background()
	c := openFile(t, filepath.Join(t.TempDir(), "utf8.db"), nil)
	for _, bad := range []string{"A\xffB", "A\x00B"} {
		for name, e := range map[string]memory.ArchivalEntry{
			"content":      {Content: bad},
			"tag":          {Content: "ok", Tags: []string{"fine", bad}},
			"metadata":     {Content: "ok", Metadata: map[string]any{"k": []any{bad}}},
			"metadata key": {Content: "ok", Metadata: map[string]any{bad: 1}},
		} {
			if _, err := c.Agent("a").Archival().Insert(ctx, e); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Errorf("archival %s %q: err = %v, want ErrInvalidArgument", name, bad, err)
			}
		}
		for name, m := range map[string]memory.Message{
			"content":   {Role: memory.RoleUser, BatchID: "b", Content: bad},
			"tool call": {Role: memory.RoleAssistant, BatchID: "b", ToolCalls: []memory.ToolCall{{ID: "1", Name: bad}}},
		} {
			if _, err := c.Agent("a").Messages().Append(ctx, m); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Errorf("message %s %q: err = %v, want ErrInvalidArgument", name, bad, err)
			}
		}
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "d", Description: bad}); !errors.Is(err, schema.ErrInvalid) && !errors.Is(err, memory.ErrInvalidArgument) {
			t.Errorf("block description %q: err = %v", bad, err)
		}
	}
	if n, _ := c.Agent("a").Archival().List(ctx, nil); len(n) != 0 {
		t.Errorf("%d archival entries written", len(n))
	}
	if ms, _ := c.Agent("a").Messages().List(ctx, nil); len(ms) != 0 {
		t.Errorf("%d messages written", len(ms))
	}
}

// An embedder constructor's nil result, passed on with its error unchecked,
// is an error from Open, not a panic.
func TestNilEmbedderPointerIsAnError(t *testing.T) {
	var emb *search.OpenAIEmbedder
	c, err := memory.Open(context.Background(), fresh(filepath.Join(t.TempDir(), "nil.db")), &memory.Options{Embedder: emb})
	if err == nil {
		c.Close()
		t.Fatal("Open with a nil *OpenAIEmbedder succeeded")
	}
}
