package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// `engram search --mode fts "analytical engine"` as a new user
// types it prints the archival entry matching both words before the block
// matching one (they tied by rank and the block came first), and shows
// each row's share of its type's best score. Each entry names a
// conversation of its own: entries naming none written 1 s to 30 min
// apart (two commands on a slow machine) are found by each other's
// words, and the second entry then matches too.
func TestCLISearchFusesTypesByScore(t *testing.T) {
	clearEmbedEnv(t)
	db := filepath.Join(t.TempDir(), "f.db")
	ok(t, db, "block", "create", "--agent", "ada", "--label", "persona", "--value", "I am an analytical assistant.")
	ok(t, db, "archival", "add", "--agent", "ada", "--meta", `{"conversation": "babbage"}`, "Babbage designed the Analytical Engine in 1837.")
	ok(t, db, "archival", "add", "--agent", "ada", "--meta", `{"conversation": "lovelace"}`, "Lovelace wrote the first program.")
	out := ok(t, db, "search", "--agent", "ada", "--mode", "fts", "analytical engine")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 3 || !strings.Contains(lines[1], "Babbage") || !strings.Contains(lines[1], "norm=") ||
		!strings.Contains(lines[2], "block persona") {
		t.Fatalf("search output:\n%s", out)
	}
}
