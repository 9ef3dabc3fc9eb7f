package postgres_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// A block's rendering past the TOAST threshold is compressed with lz4,
// on a server that has it: the rendering is written whole on every write
// of the block, and pglz's compression cost the server more than the
// rest of an append. A server without lz4 keeps pglz, and the block
// reads back as written either way.
func TestRenderedCompressedWithLZ4(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	s, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := s.Agent("a")
	if _, err := a.CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
		t.Fatal(err)
	}
	line := "the tide turned at the harbour, and the boats came in one by one\n"
	for range 200 {
		if err := a.Block("notes").Append(ctx, line); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := "lz4"
	if _, err := db.ExecContext(ctx, `CREATE TEMP TABLE lz4_probe (x TEXT COMPRESSION lz4)`); err != nil {
		want = "pglz" // a server built without lz4
	}
	var method sql.NullString
	var n int
	if err := db.QueryRowContext(ctx, `SELECT pg_column_compression(rendered), octet_length(rendered) FROM blocks WHERE owner = 'a' AND label = 'notes'`).Scan(&method, &n); err != nil {
		t.Fatal(err)
	}
	if method.String != want {
		t.Errorf("the rendering (%d bytes) is compressed with %q, want %s", n, method.String, want)
	}
	// Another store reads the rendering from the row.
	s2, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Agent("a").Block("notes").Render(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c := strings.Count(got, line); c != 200 {
		t.Errorf("the block reads back with %d of its 200 lines", c)
	}
}
