package memory_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/schema"
)

// The snapshot checksums are the only defence against a snapshot whose
// bytes are not the ones written but still form a valid automerge
// document: automerge checks its own chunk checksum and recomputes every
// change hash against the saved heads, so a flipped byte inside a saved
// document is refused by automerge itself (ErrCorrupt either way), and a
// test built on one would pass with the store's checks removed. What only
// the store's CRC catches is a whole, valid document in the wrong place:
// an older snapshot of the same block (a lost or misdirected page write)
// under the current checksum. Loaded, it silently drops every change
// folded into the current snapshot. These tests plant one on each path
// that reads a snapshot and expect ErrCorrupt.

// snapshotOf returns block label's stored snapshot, its checksum and its
// block id.
func snapshotOf(t *testing.T, c *memory.Store, label string) (snap []byte, crc, id int64) {
	t.Helper()
	err := storeaccess.Backend(c).DB().QueryRow(`SELECT s.snapshot, s.snapshot_crc, b.id FROM blocks b JOIN block_snapshots s ON s.block_id = b.id
		WHERE b.owner = 'a' AND b.label = ?`, label).Scan(&snap, &crc, &id)
	if err != nil {
		t.Fatal(err)
	}
	return snap, crc, id
}

// plantStale replaces block id's snapshot bytes by stale, a valid document
// of the same block from before, leaving the current checksum in place. It
// first checks stale loads as a document (so what follows tests the CRC,
// not automerge's own checks) and differs from what it replaces.
func plantStale(t *testing.T, c *memory.Store, table string, id int64, epoch int64, stale []byte) {
	t.Helper()
	info := blocks.Info{Label: "notes", Owner: "a", Type: blocks.Working, Schema: schema.Text{}, Permission: blocks.ReadWrite, CharLimit: blocks.DefaultCharLimit}
	if _, err := blocks.Load(info, stale, nil); err != nil {
		t.Fatalf("the planted snapshot is not a valid document, so this test would not need the CRC: %v", err)
	}
	q := `UPDATE block_snapshots SET snapshot = ? WHERE block_id = ? AND snapshot <> ?`
	args := []any{stale, id, stale}
	if table == "block_archive" {
		q = `UPDATE block_archive SET snapshot = ? WHERE block_id = ? AND epoch = ? AND snapshot <> ?`
		args = []any{stale, id, epoch, stale}
	}
	res, err := storeaccess.Backend(c).DB().Exec(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		t.Fatalf("planted the stale snapshot in %d rows, want 1", n)
	}
}

func appendLines(t *testing.T, c *memory.Store, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if err := c.Agent("a").Block("notes").Append(context.Background(), fmt.Sprintf("line %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
}

func wantCorrupt(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, memory.ErrCorrupt) {
		t.Fatalf("%s over a stale snapshot under the current checksum: err = %v, want ErrCorrupt", what, err)
	}
	if !strings.Contains(err.Error(), "checksum mismatch") {
		t.Fatalf("%s: ErrCorrupt for another reason than the checksum: %v", what, err)
	}
}

// noCompact keeps compaction to the test's own Compact calls.
var noCompact = &memory.Options{CompactAfter: 1 << 20}

// A cold load (memory/load.go, load) checks the block's snapshot.
func TestStaleSnapshotFailsTheColdLoad(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	c := openFile(t, path, noCompact)
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n"}); err != nil {
		t.Fatal(err)
	}
	appendLines(t, c, 0, 5)
	if err := c.Agent("a").Block("notes").Compact(ctx); err != nil {
		t.Fatal(err)
	}
	stale, _, id := snapshotOf(t, c, "notes")
	appendLines(t, c, 5, 10)
	if err := c.Agent("a").Block("notes").Compact(ctx); err != nil {
		t.Fatal(err)
	}
	plantStale(t, c, "block_snapshots", id, 0, stale)

	cold := openFile(t, path, noCompact)
	_, err := cold.Agent("a").Block("notes").Doc(ctx)
	wantCorrupt(t, "a cold GetBlock", err)
}

// A store holding the block catches up over another store's compaction
// (memory/load.go, applyUpdates) and checks the new snapshot.
func TestStaleSnapshotFailsTheCatchUp(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	a := openFile(t, path, noCompact)
	b := openFile(t, path, noCompact)
	if _, err := a.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Agent("a").Block("notes").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	appendLines(t, b, 0, 5)
	if err := b.Agent("a").Block("notes").Compact(ctx); err != nil {
		t.Fatal(err)
	}
	stale, _, id := snapshotOf(t, b, "notes")
	appendLines(t, b, 5, 10)
	if err := b.Agent("a").Block("notes").Compact(ctx); err != nil {
		t.Fatal(err)
	}
	plantStale(t, b, "block_snapshots", id, 0, stale)

	_, err := a.Agent("a").Block("notes").Doc(ctx)
	wantCorrupt(t, "a catch-up", err)
}

// A store holding the block switches to the epoch another store's rebase
// started (memory/epoch.go, switchEpoch) and checks that epoch's snapshot.
func TestStaleSnapshotFailsTheEpochSwitch(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	a := openFile(t, path, noCompact)
	b := openFile(t, path, noCompact)
	if _, err := a.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Agent("a").Block("notes").Doc(ctx); err != nil {
		t.Fatal(err)
	}
	appendLines(t, b, 0, 5)
	if err := b.Agent("a").Block("notes").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	stale, _, id := snapshotOf(t, b, "notes") // epoch 1's first document
	appendLines(t, b, 5, 10)
	if err := b.Agent("a").Block("notes").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	plantStale(t, b, "block_snapshots", id, 0, stale)

	_, err := a.Agent("a").Block("notes").Doc(ctx)
	wantCorrupt(t, "an epoch switch", err)
}

// Reading an archived epoch (memory/epoch.go, archives) checks its
// snapshot.
func TestStaleSnapshotFailsTheArchive(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "s.db")
	c := openFile(t, path, noCompact)
	if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "start\n"}); err != nil {
		t.Fatal(err)
	}
	appendLines(t, c, 0, 5)
	if err := c.Agent("a").Block("notes").Compact(ctx); err != nil {
		t.Fatal(err)
	}
	stale, _, id := snapshotOf(t, c, "notes")
	appendLines(t, c, 5, 10)
	if err := c.Agent("a").Block("notes").Rebase(ctx); err != nil { // archives epoch 0
		t.Fatal(err)
	}
	plantStale(t, c, "block_archive", id, 0, stale)

	_, err := c.Agent("a").Shared("a", "notes").History(ctx)
	wantCorrupt(t, "BlockHistory", err)
}
