package postgres_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// A PL/pgSQL statement is planned on its first five runs in a session,
// then kept as a generic plan unless the plans made for the values it was
// given cost less than the generic one. A lookup by an id that is NULL
// costs nothing to the planner (its filter is false), so a statement
// looking up an archival entry's neighbour that does not exist, as at
// the end of every stream and conversation, was planned again on every
// run: an archival insert spent 0.29 ms planning the three lookups of
// its own tsvector. Here every statement the writes run often, the triggers'
// included, is planned at most a few times per session: counted by
// pg_stat_statements, which the test cluster preloads.
func TestWritesAreNotPlannedEachTime(t *testing.T) {
	ctx := context.Background()
	db, dsn := migratedDSN(t)
	dbname := trackStatements(t, db)
	folded := map[string]bool{}
	bodies, err := db.QueryContext(ctx, `SELECT p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
		WHERE n.nspname = current_schema() AND p.proname LIKE 'engram%' AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'sql')`)
	if err != nil {
		t.Fatal(err)
	}
	for bodies.Next() {
		var src string
		if err := bodies.Scan(&src); err != nil {
			t.Fatal(err)
		}
		folded[bodyWords(src)] = true
	}
	if err := bodies.Err(); err != nil {
		t.Fatal(err)
	}
	bodies.Close()
	// A statement is held to its plans per run in each phase: pg_stat_statements
	// is reset between them, and each phase opens a store of its own (new
	// sessions, new plan caches).
	check := func(phase string, n int, write func(st *memory.Store)) {
		t.Helper()
		if _, err := db.ExecContext(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
			t.Fatal(err)
		}
		st, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		write(st)
		st.Close()
		rows, err := db.QueryContext(ctx, `SELECT s.query, s.calls, s.plans FROM pg_stat_statements s
			JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1 AND s.calls >= $2`, dbname, n)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		seen := 0
		for rows.Next() {
			var query string
			var calls, plans int64
			if err := rows.Scan(&query, &calls, &plans); err != nil {
				t.Fatal(err)
			}
			if folded[bodyWords(query)] {
				continue
			}
			seen++
			// A few plans per session the store used (a statement is
			// planned five times before a generic plan is weighed, and
			// again when a table's statistics change); not one a run.
			if plans > calls/2 {
				t.Errorf("%s: planned %d times in %d runs: %s", phase, plans, calls, strings.Join(strings.Fields(query), " "))
			}
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		if seen < 5 {
			t.Fatalf("%s: %d statements ran %d times or more, want the writes' and their triggers'", phase, seen, n)
		}
	}

	const n = 40
	// An agent's stream entries, written within a second of each other:
	// none has a neighbour to look up (entries of a stream are neighbours
	// from a second apart).
	check("stream entries without neighbours", n, func(st *memory.Store) {
		for i := range n {
			if _, err := st.Agent("agent-0").Archival().Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprint("entry ", i)}); err != nil {
				t.Fatal(err)
			}
		}
	})
	check("every kind of write", n, func(st *memory.Store) {
		ag := st.Agent("agent-1")
		if _, err := ag.CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			line := fmt.Sprintf("note %d: the tide turned at the harbour", i)
			if _, err := ag.Archival().Insert(ctx, memory.ArchivalEntry{Content: line}); err != nil {
				t.Fatal(err)
			}
			if _, err := ag.Archival().Insert(ctx, memory.ArchivalEntry{Content: line, Metadata: map[string]any{"conversation": "c1"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := ag.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: line, BatchID: "session"}); err != nil {
				t.Fatal(err)
			}
			if err := ag.Block("notes").Append(ctx, line+"\n"); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// bodyWords is a statement's words without its constants and parameters
// (pg_stat_statements shows constants as $n): the key by which the test
// recognizes an engram SQL function's body. The planner runs the body of
// an immutable SQL function called with constants (engram_seq_step) to
// fold the call, planning it each time; it runs only while its caller is
// planned, so it says nothing of how often that is.
func bodyWords(q string) string {
	var out []string
	for _, w := range strings.Fields(q) {
		if !strings.ContainsAny(w, "$0123456789") {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}
