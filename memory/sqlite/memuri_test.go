package sqlite_test

import (
	"context"
	"testing"
	"time"

	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/memory/sqlite"
)

// SQLite's own names for an in-memory database ("file::memory:",
// mode=memory) and the empty "file:" (a private temporary database) open
// as ":memory:" does: one connection, no WAL. They used to wait the whole
// busy timeout for a WAL switch SQLite never makes, then fail with
// "set WAL mode on file::memory:: <nil>".
func TestInMemoryURIsOpen(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, target := range []string{
		"file::memory:",
		"file::memory:?cache=shared",
		"file:mem.db?mode=memory",
		"file:",
		"sqlite://file::memory:",
	} {
		t.Run(target, func(t *testing.T) {
			// The old failure was an error after the busy timeout, which
			// Open reports; the deadline only bounds a hang. Generous: on
			// a machine loaded by other test binaries Open took over 3 s.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			start := time.Now()
			s, err := memory.Open(ctx, target, nil)
			if err != nil {
				t.Fatalf("Open: %v (after %v)", err, time.Since(start).Round(time.Millisecond))
			}
			defer s.Close()
			if _, err := s.Agent("ada").CreateBlock(ctx, memory.BlockSpec{Label: "notes", Value: "kept"}); err != nil {
				t.Fatal(err)
			}
			if r, err := s.Agent("ada").Block("notes").Render(ctx); err != nil || r != "kept" {
				t.Fatalf("reads %q, %v", r, err)
			}
			if p, ok := memory.SQLitePath(target); !ok || p != ":memory:" {
				t.Fatalf("SQLitePath = %q, %v; want :memory:", p, ok)
			}
		})
	}
	// A file that keeps another journal mode is refused at once, saying so.
	b, err := sqlite.Open(context.Background(), "file:x.db?vfs=unix-none", &sqlite.Options{BusyTimeout: 200 * time.Millisecond})
	if err == nil {
		b.Close()
		return
	}
	if got := err.Error(); contains(got, "<nil>") {
		t.Fatalf("error %q says <nil>", got)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
