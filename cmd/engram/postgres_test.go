package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
)

// The CLI on PostgreSQL: --db takes a postgres:// URL; a store moves from
// a SQLite file to PostgreSQL and back with export and import, history
// included; stats never print a password.
func TestCLIPostgres(t *testing.T) {
	srv := pgtest.Start(t)
	file := filepath.Join(t.TempDir(), "local.db")
	ok(t, file, "block", "create", "--agent", "ada", "--label", "persona", "--type", "core", "--value", "I am Ada.")
	ok(t, file, "block", "append", "--agent", "ada", "persona", " I like trains.")
	ok(t, file, "block", "create", "--agent", "ada", "--label", "todo", "--schema", `{"kind":"list"}`, "--value", `["ship it"]`)
	ok(t, file, "archival", "add", "--agent", "ada", "--tags", "rail", "Trains run on rails.")
	dump := filepath.Join(t.TempDir(), "dump.json")
	ok(t, file, "export", "--out", dump)

	pg := srv.NewDatabase(t)
	ok(t, pg, "import", "--in", dump)
	for _, args := range [][]string{
		{"block", "show", "--agent", "ada", "--history", "persona"},
		{"block", "show", "--agent", "ada", "todo"},
		{"archival", "list", "--agent", "ada"},
	} {
		want, got := ok(t, file, args...), ok(t, pg, args...)
		if want != got {
			t.Errorf("engram %s differs after moving to PostgreSQL:\nSQLite:\n%s\nPostgreSQL:\n%s", strings.Join(args, " "), want, got)
		}
	}
	// Search finds the same entry (the engines score differently).
	if out := ok(t, pg, "search", "--agent", "ada", "--mode", "fts", "rails"); !strings.Contains(out, "Trains run on «rails».") {
		t.Errorf("search on PostgreSQL:\n%s", out)
	}
	// A write through the URL is there for the next invocation.
	ok(t, pg, "block", "append", "--agent", "ada", "persona", " And boats.")
	if out := ok(t, pg, "block", "show", "--agent", "ada", "persona"); !strings.Contains(out, "I like trains. And boats.") {
		t.Fatalf("after append on PostgreSQL:\n%s", out)
	}
	// And back: PostgreSQL → a new SQLite file, history included.
	dump2 := filepath.Join(t.TempDir(), "dump2.json")
	ok(t, pg, "export", "--out", dump2)
	back := filepath.Join(t.TempDir(), "back.db")
	ok(t, back, "import", "--in", dump2)
	args := []string{"block", "show", "--agent", "ada", "--history", "persona"}
	if want, got := ok(t, pg, args...), ok(t, back, args...); want != got {
		t.Errorf("history differs after moving back:\nPostgreSQL:\n%s\nSQLite:\n%s", want, got)
	}

	// Stats name the vector engine in use.
	want := "vectors   in-process"
	if srv.HasPGVector(t) {
		want = "vectors   pgvector"
	}
	if out := ok(t, pg, "--embedder", "offline", "stats"); !strings.Contains(out, want) {
		t.Errorf("stats with an embedder: want %q in\n%s", want, out)
	}

	// Stats name the store without its password.
	withPW := strings.Replace(pg, "postgres://nobody@", "postgres://nobody:hunter2@", 1)
	if os.Getenv(pgtest.EnvDSN) == "" && withPW != pg {
		out := ok(t, withPW, "stats")
		if strings.Contains(out, "hunter2") || !strings.Contains(out, "xxxxx") {
			t.Fatalf("stats output:\n%s", out)
		}
	}
}

// A pending proposal survives a move from SQLite to
// PostgreSQL (it was gone after one), and can be approved there.
func TestCLIPostgresKeepsProposals(t *testing.T) {
	srv := pgtest.Start(t)
	file := filepath.Join(t.TempDir(), "local.db")
	ok(t, file, "block", "create", "--agent", "ada", "--label", "persona", "--perm", "Partner", "--value", "I am Ada.")
	ok(t, file, "block", "append", "--agent", "ada", "--as-agent", "persona", " I like tea.")
	dump := filepath.Join(t.TempDir(), "dump.json")
	ok(t, file, "export", "--out", dump)
	pg := srv.NewDatabase(t)
	if out := ok(t, pg, "import", "--in", dump); !strings.Contains(out, "1 proposals") {
		t.Fatalf("import: %s", out)
	}
	want, got := ok(t, file, "proposals", "list", "--diff"), ok(t, pg, "proposals", "list", "--diff")
	if want != got || !strings.Contains(got, "append_text") {
		t.Fatalf("proposals differ after the move:\nSQLite:\n%s\nPostgreSQL:\n%s", want, got)
	}
	ok(t, pg, "proposals", "approve", "--as", "carol", "1")
	if out := ok(t, pg, "block", "show", "--agent", "ada", "persona"); !strings.Contains(out, "I am Ada. I like tea.") {
		t.Fatalf("after approving on PostgreSQL:\n%s", out)
	}
}
