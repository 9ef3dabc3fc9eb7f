package postgres

import (
	"context"
	"regexp"
	"strings"
	"testing"

	"github.com/engram-go/engram/search"
)

// agentCond is an index condition on the agent, alone or with the query.
var agentCond = regexp.MustCompile(`Index Cond: \(+agent = `)

// Migration 0015 makes the (agent, fts) GIN indexes, and an agent's
// full-text leg reads through an agent-keyed index, never a bitmap of
// every match in the store (which the planner ANDed with the agent's rows
// before: EXPLAIN in docs/performance.md). Which agent-keyed index the
// planner takes depends on the statistics; both visit the agent's rows
// only.
func TestFullTextPlanUsesAgentIndex(t *testing.T) {
	ctx := context.Background()
	b := openTestBackend(t)
	var ext bool
	if err := b.DB().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin')`).Scan(&ext); err != nil {
		t.Fatal(err)
	}
	if !ext {
		t.Skip("btree_gin is not available on this server: migration 0015 made no (agent, fts) index")
	}
	for _, q := range []string{
		`INSERT INTO archival (agent, content, created_at, valid_from)
			SELECT 'agent-' || (i % 500), CASE WHEN i % 2 = 0 THEN 'common ' ELSE 'rare ' END || 'w' || (i % 97), i, i
			FROM generate_series(1, 100000) i`,
		`ANALYZE archival`,
		`SET enable_seqscan = off`,
	} {
		if _, err := b.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, idx := range []string{"archival_agent_fts", "messages_agent_fts"} {
		var def string
		if err := b.DB().QueryRowContext(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = ?`, idx).Scan(&def); err != nil {
			t.Fatalf("index %s: %v", idx, err)
		}
		if !strings.Contains(def, "USING gin (agent, fts)") {
			t.Errorf("index %s is %s", idx, def)
		}
	}
	d := b.SearchDialect()
	for _, c := range []struct {
		table, owner, where string
		args                []any
		agent               bool
	}{
		{"archival", "agent-7", "a.agent = ? AND a.valid_to IS NULL", []any{"agent-7"}, true},
		{"archival", "", "a.valid_to IS NULL", nil, false},
	} {
		q, args, _ := d.FullText(&search.FullTextParams{Table: c.table, Alias: "a", Match: `"common"`, Terms: []string{"common"},
			Columns: "a.id", Where: c.where, Args: c.args, Limit: 10, Owner: c.owner})
		rows, err := b.DB().QueryContext(ctx, "EXPLAIN "+q, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		storeWide := strings.Contains(p, "on archival_fts") || strings.Contains(p, "BitmapAnd")
		byAgent := agentCond.MatchString(p)
		if c.agent && (storeWide || !byAgent) || !c.agent && byAgent {
			t.Errorf("%s owner %q: plan reads a store-wide index %v, an agent-keyed one %v:\n%s", c.table, c.owner, storeWide, byAgent, p)
		}
	}
}
