package memory_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
)

// TestSnapshotsLeaveTheBlocksRow: a database made before migration 0013
// (snapshots in the blocks row) opens with every block's content, history
// and archived epochs intact, its snapshots moved to block_snapshots, and
// takes new writes and compactions there.
func TestSnapshotsLeaveTheBlocksRow(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	c, err := memory.Open(ctx, fresh(path), &memory.Options{CompactAfter: 8})
	if err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"notes", "journal", "empty"} {
		if _, err := c.Agent("a").CreateBlock(ctx, memory.BlockSpec{Label: label, Permission: blocks.Admin}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 40 {
		if err := c.Agent("a").Block("notes").Append(ctx, fmt.Sprintf("line %d\n", i)); err != nil {
			t.Fatal(err)
		}
		if err := c.Agent("a").Block("journal").Append(ctx, fmt.Sprintf("entry %d; ", i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Agent("a").Block("journal").Rebase(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Agent("a").Block("journal").Append(ctx, "after the rebase"); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	history := map[string]int{}
	for _, label := range []string{"notes", "journal", "empty"} {
		if want[label], err = c.Agent("a").Block(label).Render(ctx); err != nil {
			t.Fatal(err)
		}
		h, err := c.Agent("a").Shared("a", label).History(ctx)
		if err != nil {
			t.Fatal(err)
		}
		history[label] = len(h)
	}
	c.Close()

	// Put the schema back as it was at version 12 (before 0014, 0015 and
	// 0016, too).
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(append(append([]string{}, `DROP TABLE login_links`, `DROP TABLE tokens`), rollBackMessageContext...), []string{
		`DROP TRIGGER vec_archival_dirty_ad`,
		`DROP TABLE vec_archival_dirty`,
		`ALTER TABLE blocks ADD COLUMN snapshot BLOB`,
		`ALTER TABLE blocks ADD COLUMN snapshot_crc INTEGER`,
		`UPDATE blocks SET snapshot = (SELECT snapshot FROM block_snapshots WHERE block_id = blocks.id),
			snapshot_crc = (SELECT snapshot_crc FROM block_snapshots WHERE block_id = blocks.id)`,
		`DROP TABLE block_snapshots`,
		`PRAGMA user_version = 12`,
	}...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	var withSnapshot int
	if err := db.QueryRow(`SELECT count(*) FROM blocks WHERE length(snapshot) > 0 AND snapshot_crc IS NOT NULL`).Scan(&withSnapshot); err != nil || withSnapshot != 3 {
		t.Fatalf("the old schema holds %d snapshots, want 3 (%v)", withSnapshot, err)
	}
	db.Close()

	c = openFile(t, path, &memory.Options{CompactAfter: 8})
	for label, w := range want {
		got, err := c.Agent("a").Block(label).Render(ctx)
		if err != nil || got != w {
			t.Fatalf("%s after the migration: %q, %v; want %q", label, got, err, w)
		}
		b, err := c.Agent("a").Block(label).Doc(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if b.Render() != w {
			t.Fatalf("%s loaded from its snapshot: %q, want %q", label, b.Render(), w)
		}
		h, err := c.Agent("a").Shared("a", label).History(ctx)
		if err != nil || len(h) != history[label] {
			t.Fatalf("%s history: %d changes (%v), want %d", label, len(h), err, history[label])
		}
	}
	var cols int
	if err := storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM pragma_table_info('blocks') WHERE name IN ('snapshot', 'snapshot_crc')`).Scan(&cols); err != nil || cols != 0 {
		t.Fatalf("blocks keeps %d snapshot columns (%v)", cols, err)
	}
	// New writes compact into block_snapshots, and a fresh process loads
	// from there.
	for i := range 20 {
		if err := c.Agent("a").Block("notes").Append(ctx, fmt.Sprintf("more %d\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	c = openFile(t, path, nil)
	got, err := c.Agent("a").Block("notes").Render(ctx)
	if err != nil || !strings.HasSuffix(got, "more 19\n") || !strings.HasPrefix(got, want["notes"]) {
		t.Fatalf("notes after more writes: %q (%v)", got, err)
	}
	b, err := c.Agent("a").Block("notes").Doc(ctx)
	if err != nil || b.Render() != got {
		t.Fatalf("notes loaded: %v", err)
	}
	// Deleting a block deletes its snapshot.
	if err := c.Agent("a").Block("empty").Delete(ctx); err != nil {
		t.Fatal(err)
	}
	var orphans int
	if err := storeaccess.Backend(c).DB().QueryRow(`SELECT count(*) FROM block_snapshots WHERE block_id NOT IN (SELECT id FROM blocks)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Fatalf("%d snapshots of deleted blocks (%v)", orphans, err)
	}
}
