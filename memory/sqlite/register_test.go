package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// This test binary links package memory and SQLite, not memory/postgres:
// SQLite needs no import, and a PostgreSQL target fails, as database/sql
// does for an unregistered driver, with an error naming the import
// (never the password), and creates nothing.
func TestPostgresTargetsNeedTheImport(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	t.Chdir(dir)
	if got := memory.Drivers(); len(got) != 0 {
		t.Fatalf("Drivers() = %v in a SQLite-only binary", got)
	}
	st, err := memory.Open(ctx, "file.db", nil)
	if err != nil {
		t.Fatalf("SQLite without an import: %v", err)
	}
	st.Close()
	for _, target := range []string{
		"postgres://ada:s3cret@127.0.0.1:1/engram",
		"POSTGRESQL://ada:s3cret@/engram?host=/tmp",
		"host=127.0.0.1 dbname=engram password=s3cret",
	} {
		st, err := memory.Open(ctx, target, nil)
		if err == nil {
			st.Close()
			t.Fatalf("Open(%q) succeeded without memory/postgres", target)
		}
		msg := err.Error()
		if !errors.Is(err, memory.ErrUnknownScheme) || !strings.Contains(msg, "forgotten import?") ||
			!strings.Contains(msg, `import _ "github.com/engram-go/engram/memory/postgres"`) || strings.Contains(msg, "s3cret") {
			t.Errorf("Open(%q): %v", target, err)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "*")); len(m) != 1 || filepath.Base(m[0]) != "file.db" {
		t.Errorf("files after the refusals: %v", m)
	}
}
