package sqlite_test

import (
	"compress/gzip"
	"context"
	"database/sql"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/sqlite"
)

// testdata/before-move-v14.db.gz is a store written by engram at main
// f8da536, before the schema files moved from migrations/ to
// migrations/sqlite/: a block "notes" of "ada" and one archival entry,
// at user_version 14. It opens as it is, with no migration re-applied,
// and reads back what was written.
func TestOpensDatabaseFromBeforeTheMove(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	gunzip(t, "testdata/before-move-v14.db.gz", path)

	db, err := sql.Open(sqlite.Driver, path)
	if err != nil {
		t.Fatal(err)
	}
	from, to, err := sqlite.Migrate(ctx, db)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if from != 14 || to < 14 {
		t.Fatalf("Migrate = %d..%d, want from 14 (the fixture's version)", from, to)
	}

	st, err := memory.Open(ctx, path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	doc, err := st.Agent("ada").Block("notes").Doc(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := doc.Text(); got != "written before the migrations moved\n" {
		t.Fatalf("block text %q", got)
	}
	es, err := st.Agent("ada").Archival().List(ctx, nil)
	if err != nil || len(es) != 1 || es[0].Content != "the heron nests by the old mill" {
		t.Fatalf("archival %+v, %v", es, err)
	}
}

func gunzip(t *testing.T, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	zr, err := gzip.NewReader(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, zr); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
