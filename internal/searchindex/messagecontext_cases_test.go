package searchindex_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/search"
)

// TestMessageContextHandEditCases: hand edits on SQLite (another pool)
// around the two messages on each side a message is indexed with: after
// each statement fts_messages holds what its view gives, once per row, a
// whole and a partial cache rank as SQL, and the partial one's statistics
// equal a fresh count. Agent a is resident in the partial cache, b not.
// A message at a real seq two from an insert was indexed a second time
// (the insert re-indexed a seq range, and deleted only integer seqs), and
// one at a text seq not at all.
func TestMessageContextHandEditCases(t *testing.T) {
	ins := func(agent, content, batch, seq string) string {
		return `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ('` + agent + `', 'user', '` + content + `', '` + batch + `', ` + seq + `, 0)`
	}
	for _, tc := range []struct {
		name   string
		writes []string
	}{
		{"arrival and neighbour deleted in one tx", []string{
			`BEGIN; ` + ins("b", "kale fig", "x", "6") + `; DELETE FROM messages WHERE agent = 'b' AND batch_id = 'x' AND seq = 3; COMMIT`}},
		{"arrival moved in the window", []string{
			ins("b", "kale fig", "x", "6"), `UPDATE messages SET seq = 7 WHERE content = 'kale fig'`}},
		{"two arrivals each side", []string{
			ins("b", "kale fig", "x", "-2") + `, ('b', 'user', 'lemon', 'x', -1, 0), ('b', 'user', 'iris iris', 'x', 6, 0), ('b', 'user', 'kale', 'x', 7, 0)`}},
		{"arrival, then its content", []string{
			ins("b", "kale fig", "x", "6"), `UPDATE messages SET content = 'iris' WHERE content = 'kale fig'`}},
		{"arrival beside a real seq", []string{
			`UPDATE messages SET seq = 6.5 WHERE agent = 'b' AND batch_id = 'x' AND seq = 5`, ins("b", "kale fig", "x", "6"), ins("b", "iris", "x", "5.5")}},
		{"arrival two from a real seq", []string{
			`UPDATE messages SET seq = 7.5 WHERE agent = 'b' AND batch_id = 'x' AND seq = 5`, ins("b", "kale fig", "x", "6")}},
		{"text seq", []string{ins("b", "kale fig", "x", "'2x'"), ins("b", "iris", "x", "'3y'")}},
		{"seq overflow to real", []string{
			ins("b", "kale fig", "y", "9223372036854775807"), ins("b", "iris", "y", "9223372036854775806"),
			`UPDATE messages SET seq = seq + 1 WHERE agent = 'b' AND batch_id = 'y' AND seq = 9223372036854775807`,
			ins("b", "lemon", "y", "9223372036854775807")}},
		{"bottom end", []string{
			ins("b", "kale fig", "z", "-9223372036854775808"), ins("b", "iris", "z", "-9223372036854775807"),
			ins("b", "lemon", "z", "-9223372036854775806"), `DELETE FROM messages WHERE agent = 'b' AND batch_id = 'z' AND seq = -9223372036854775807`,
			`UPDATE messages SET seq = -9223372036854775807 WHERE agent = 'b' AND batch_id = 'z' AND seq = -9223372036854775808`}},
		{"id moved in place", []string{`UPDATE messages SET id = 5000 WHERE agent = 'b' AND batch_id = 'x' AND seq = 3`}},
		{"id moved beside", []string{`UPDATE messages SET id = 5000, agent = 'b', batch_id = 'x', seq = 6 WHERE agent = 'a' AND batch_id = 'x' AND seq = 3`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			words := []string{"apple banana", "cherry", "damson elder fig", "grape", "hazel iris", "juniper kale lemon"}
			e := newSQLiteEdits(t, func(other *sql.DB) {
				other.SetMaxOpenConns(1) // a case's BEGIN and COMMIT on one connection
				for _, agent := range []string{"a", "b"} {
					for i, w := range words {
						if _, err := other.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, 'x', ?, 0)`, agent, w, i); err != nil {
							t.Fatal(err)
						}
					}
				}
			})
			agents := []string{"a", "b"}
			queries := append(strings.Fields("apple cherry fig grape iris kale lemon"), "kale fig", "iris lemon apple")
			history := func() string { return "" }
			e.check(t, "seed", agents, queries, history)
			if !searchindex.TextCacheHeld(e.partial, search.Messages, "a") || searchindex.TextCacheHeld(e.partial, search.Messages, "b") {
				t.Fatal("want a resident, b not")
			}
			reads := searchindex.TextStatsReads(e.partial)
			for _, w := range tc.writes {
				if _, err := e.other.ExecContext(ctx, w); err != nil {
					t.Fatalf("%s: %v", w, err)
				}
				e.check(t, w, agents, queries, history)
			}
			t.Logf("statistics read %d times", searchindex.TextStatsReads(e.partial)-reads)
		})
	}
}
