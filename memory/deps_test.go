package memory_test

import (
	"os/exec"
	"strings"
	"testing"
)

// A program that opens only SQLite does not link pgx: package memory
// reaches PostgreSQL through registration (memory/postgres's init), not
// an import. Checked with the go tool on the quickstart example, and on
// memory/postgres, which must link it (or the check proves nothing).
func TestSQLiteOnlyProgramLinksNoPgx(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go tool:", err)
	}
	deps := func(pkg string) string {
		out, err := exec.Command(goTool, "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		return string(out)
	}
	for _, pkg := range []string{"github.com/engram-go/engram/examples/quickstart", "github.com/engram-go/engram/memory"} {
		if d := deps(pkg); strings.Contains(d, "github.com/jackc/pgx") || strings.Contains(d, "engram/memory/postgres") {
			t.Errorf("%s links PostgreSQL:\n%s", pkg, d)
		}
	}
	if d := deps("github.com/engram-go/engram/memory/postgres"); !strings.Contains(d, "github.com/jackc/pgx/v5\n") {
		t.Errorf("memory/postgres does not list pgx among its dependencies:\n%s", d)
	}
}
