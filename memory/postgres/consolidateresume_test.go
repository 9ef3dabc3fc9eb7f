package postgres_test

import (
	"context"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory"
)

// A resumed consolidation round finds where the last one stopped from
// the last entry of the agent's (agent, archival_id) index, whatever the
// planner guesses of the agent. Asked as MAX, the planner read every
// examined entry of an agent it took for a row (the statistics taken
// when every agent had one): 715 buffers for 50,000 entries where the
// index's last entry is 4.
func TestConsolidationResumeReadsOneEntry(t *testing.T) {
	ctx := context.Background()
	db, dsn := migratedDSN(t)
	dbname := trackStatements(t, db)
	st, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	arch := st.Agent("agent-0").Archival()
	if _, err := arch.Insert(ctx, memory.ArchivalEntry{Content: "the tide turned at the harbour"}); err != nil {
		t.Fatal(err)
	}
	// Rounds' rows as many agents of one entry each would leave them, the
	// statistics taken then, and afterwards one agent with many: written
	// without their entries (the foreign key's trigger off for the
	// session), as only the rows' count matters here.
	for _, q := range []string{
		`SET session_replication_role = replica`,
		`INSERT INTO archival_minhash (archival_id, agent, leader_id)
			SELECT g, 'agent-' || g, g FROM generate_series(1000001, 1100000) g`,
		`ANALYZE archival_minhash`,
		`INSERT INTO archival_minhash (archival_id, agent, leader_id)
			SELECT g, 'agent-0', g FROM generate_series(2000001, 2050000) g`,
		`SET session_replication_role = origin`,
		`SELECT pg_stat_statements_reset()`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	const rounds = 5
	for i := range rounds {
		rep, err := arch.Consolidate(ctx, &memory.ConsolidateOptions{Resume: true, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		// The first round examines the one entry no round examined; the
		// others find nothing left.
		want := 0
		if i == 0 {
			want = 1
		}
		if rep.Examined != want {
			t.Fatalf("round %d examined %d entries, want %d", i, rep.Examined, want)
		}
	}
	// The index's entry and the first run's planning (the catalogs): a
	// few dozen buffers, against hundreds.
	query, calls, blocks := statementBuffers(t, db, dbname, "SELECT %FROM archival_minhash WHERE agent = $1%")
	if calls != rounds {
		t.Fatalf("%d runs of %q, want %d", calls, query, rounds)
	}
	if per := float64(blocks) / float64(calls); per > 60 {
		t.Errorf("%.0f buffers per run over an agent of 50,000 examined entries, want at most 60: %s", per, strings.Join(strings.Fields(query), " "))
	}
}
