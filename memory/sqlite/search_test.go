package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// The dialect's metadata comparison travels the path as an argument and
// compares json_extract's values: numbers numerically, strings as text,
// booleans as 1 and 0.
func TestSearchDialectMetadataCompare(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, filepath.Join(t.TempDir(), "m.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	const row = `{"n": 10, "s": "b", "ok": true, "deep": {"k": "v"}}`
	for _, c := range []struct {
		f    search.MetadataFilter
		want bool
	}{
		{search.MetadataFilter{Key: "n", Equals: 10}, true},
		{search.MetadataRangeFilter("n", 9, nil), true},
		{search.MetadataRangeFilter("n", 11, nil), false},
		{search.MetadataRangeFilter("n", nil, 9.5), false},
		{search.MetadataFilter{Key: "s", Equals: "b"}, true},
		{search.MetadataFilter{Key: "ok", Equals: true}, true},
		{search.MetadataFilter{Key: "ok", Equals: false}, false},
		{search.MetadataFilter{Key: "deep.k", Equals: "v"}, true},
		{search.MetadataFilter{Key: "missing", Equals: "v"}, false},
	} {
		cond, args, err := searchindex.MetadataCondition(b.SearchDialect(), "m", c.f)
		if err != nil {
			t.Fatalf("%+v: %v", c.f, err)
		}
		var got sql.NullBool
		q := `SELECT ` + cond + ` FROM (SELECT ? AS m)`
		if err := b.DB().QueryRowContext(ctx, q, append(args, row)...).Scan(&got); err != nil {
			t.Fatalf("%+v: %s: %v", c.f, q, err)
		}
		if got.Bool != c.want {
			t.Errorf("%+v: %v, want %v", c.f, got.Bool, c.want)
		}
	}
}

// The vector tables are the dialect's to make: missing before the first
// embedder, made for its dimensions (and their CHECK holds a vector to
// them), dropped and made again by a Reembed to other dimensions.
func TestSearchDialectMakesVectorTables(t *testing.T) {
	ctx := context.Background()
	b, err := Open(ctx, filepath.Join(t.TempDir(), "v.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := b.SearchDialect()
	if ok, err := d.VectorTableExists(ctx, b.DB(), "vec_blocks"); err != nil || ok {
		t.Fatalf("before any embedder: vec_blocks exists %v, %v", ok, err)
	}
	x, err := searchindex.NewIndex(ctx, b.DB(), d, search.NewOffline(8), &searchindex.IndexOptions{Write: b.Write})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	for _, table := range []string{"vec_blocks", "vec_archival", "vec_messages"} {
		if ok, err := d.VectorTableExists(ctx, b.DB(), table); err != nil || !ok {
			t.Fatalf("after NewIndex: %s exists %v, %v", table, ok, err)
		}
	}
	insert := func(dims int) error {
		return b.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO vec_messages (rowid, owner, embedding) VALUES (1, 'ann', ?)`, make([]byte, 4*dims))
			return err
		})
	}
	if err := insert(8); err != nil {
		t.Fatalf("an 8-dim vector into 8-dim tables: %v", err)
	}
	if err := insert(16); err == nil {
		t.Fatal("a 16-dim vector went into 8-dim tables")
	}
	x, err = searchindex.NewIndex(ctx, b.DB(), d, search.NewOffline(16), &searchindex.IndexOptions{Write: b.Write})
	if err == nil {
		t.Fatal("another embedder opened without Reembed")
	}
	if err := x.Reembed(ctx, nil); err != nil {
		t.Fatal(err)
	}
	x.Close()
	if err := insert(16); err != nil {
		t.Fatalf("a 16-dim vector after Reembed to 16: %v", err)
	}
}
