package searchindex_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// Conversation s1: A (live), S (superseded), X (live), Y (superseded).
// Superseding X by hand changes Y's second entry before (before(X) is
// now S, any entry, not A): Y must be rewritten.
func TestArchivalSupersedeNextToDeadPostgres(t *testing.T) {
	ctx := context.Background()
	_, b := openPGStore(t)
	exec := func(q string) {
		t.Helper()
		if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES
		(1, 'a', 'alpha', '{"session": "s1"}', '[]', '', 0, 0, NULL),
		(2, 'a', 'sigma', '{"session": "s1"}', '[]', '', 0, 0, 1),
		(3, 'a', 'xray', '{"session": "s1"}', '[]', '', 0, 0, NULL),
		(4, 'a', 'yankee', '{"session": "s1"}', '[]', '', 0, 0, 1)`)
	if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
		t.Fatalf("after the inserts: %v stale", bad)
	}
	followed, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil,
		&searchindex.IndexOptions{Write: b.Write, TextCacheBytes: 1 << 30, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer followed.Close()
	if err := followed.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	exec(`UPDATE archival SET valid_to = 1 WHERE id = 3`)
	if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
		t.Errorf("after superseding 3: entries %v stale", bad)
	}
	fresh, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil,
		&searchindex.IndexOptions{Write: b.Write, TextCacheBytes: 1 << 30, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	if err := fresh.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	o := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(true)
	for _, q := range []string{"alpha", "sigma"} {
		want, _ := fresh.Search(ctx, q, search.Scope{Agent: "a"}, o)
		got, _ := followed.Search(ctx, q, search.Scope{Agent: "a"}, o)
		if err := sameBits(want, got); err != nil {
			t.Errorf("%q: followed cache vs fresh: %v\nfresh %v\nfollowed %v", q, err, keys(want), keys(got))
		}
	}
	exec(`UPDATE archival SET valid_to = NULL WHERE id = 3`)
	if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
		t.Errorf("after restoring 3: entries %v stale", bad)
	}
}

// The same through the Go API: Supersede only.
func TestArchivalSupersedeNextToDeadAPIPostgres(t *testing.T) {
	ctx := context.Background()
	store, b := openPGStore(t)
	ar := store.Agent("a").Archival()
	conv := map[string]any{"session": "s1"}
	ins := func(c string) int64 {
		e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: c, Metadata: conv})
		if err != nil {
			t.Fatal(err)
		}
		return e.ID
	}
	ins("alpha")
	s := ins("sigma")
	x := ins("xray")
	y := ins("yankee")
	// S and Y superseded by entries elsewhere (another conversation).
	for _, id := range []int64{s, y} {
		if _, err := ar.Supersede(ctx, id, memory.ArchivalEntry{Content: "elsewhere", Metadata: map[string]any{"session": "s9"}}); err != nil {
			t.Fatal(err)
		}
	}
	if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
		t.Fatalf("before: %v stale", bad)
	}
	if _, err := ar.Supersede(ctx, x, memory.ArchivalEntry{Content: "xray two", Metadata: map[string]any{"session": "s9"}}); err != nil {
		t.Fatal(err)
	}
	if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
		t.Errorf("after Supersede(%d): entries %v stale (y = %d)", x, bad, y)
	}
}

// SQLite control: the same hand edit.
func TestArchivalSupersedeNextToDeadSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	for _, q := range []string{`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES
		(1, 'a', 'alpha', '{"session": "s1"}', '[]', '', 0, 0, NULL),
		(2, 'a', 'sigma', '{"session": "s1"}', '[]', '', 0, 0, 1),
		(3, 'a', 'xray', '{"session": "s1"}', '[]', '', 0, 0, NULL),
		(4, 'a', 'yankee', '{"session": "s1"}', '[]', '', 0, 0, 1)`,
		`UPDATE archival SET valid_to = 1 WHERE id = 3`, `UPDATE archival SET valid_to = NULL WHERE id = 3`} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
		if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
			t.Errorf("after %s: extra %v missing %v", q, extra, missing)
		}
	}
}
