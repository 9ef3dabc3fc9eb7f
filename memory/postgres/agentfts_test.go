package postgres

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/driver"
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
			FROM generate_series(1, 10000) i`,
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
		q, args, _ := d.FullText(&driver.FullTextParams{Table: c.table, Alias: "a", Match: `"common"`, Terms: []string{"common"},
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

// ownerCond is an index condition on a block's owner, alone or with the
// query.
var ownerCond = regexp.MustCompile(`Index Cond: \(+owner = `)

// Migration 0016 makes the (owner, fts) GIN index on blocks, and an
// agent's blocks leg (its own blocks and those shared with it) reads
// through it and the shared blocks' ids, never a bitmap of every block
// match in the store (which the EXISTS on shares left the planner with
// before: EXPLAIN in docs/performance.md).
func TestBlocksFullTextPlanUsesOwnerIndex(t *testing.T) {
	ctx := context.Background()
	b := openTestBackend(t)
	var ext bool
	if err := b.DB().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin')`).Scan(&ext); err != nil {
		t.Fatal(err)
	}
	if !ext {
		t.Skip("btree_gin is not available on this server: migration 0016 made no (owner, fts) index")
	}
	for _, q := range []string{
		`INSERT INTO blocks (owner, label, rendered, block_type, permission, schema_json, char_limit, created_at, updated_at)
			SELECT 'agent-' || (i % 1000), 'b' || i, CASE WHEN i % 2 = 0 THEN 'common ' ELSE 'rare ' END || 'w' || (i % 97),
				'working', 'ReadWrite', '{}', 5000, 0, 0
			FROM generate_series(1, 20000) i`,
		`UPDATE blocks SET fts = setweight(to_tsvector('english', label), 'A') || setweight(to_tsvector('english', rendered), 'C')`,
		`INSERT INTO shares (block_id, agent, permission, created_at)
			SELECT id, 'agent-7', 'ReadOnly', 0 FROM blocks WHERE owner IN ('agent-8', 'agent-9')`,
		`ANALYZE blocks`,
		`ANALYZE shares`,
	} {
		if _, err := b.DB().ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var def string
	if err := b.DB().QueryRowContext(ctx, `SELECT indexdef FROM pg_indexes WHERE indexname = 'blocks_owner_fts'`).Scan(&def); err != nil {
		t.Fatalf("index blocks_owner_fts: %v", err)
	}
	if !strings.Contains(def, "USING gin (owner, fts)") {
		t.Errorf("index blocks_owner_fts is %s", def)
	}
	const scope = `(b.owner = ? OR EXISTS (SELECT 1 FROM shares sh WHERE sh.block_id = b.id AND sh.agent = ?))`
	d := b.SearchDialect()
	var ranked []string
	for _, c := range []struct {
		owner   string
		shared  bool
		byOwner bool
	}{
		{"agent-7", true, true},
		{"agent-7", false, false}, // the leg as it was: Where alone
	} {
		p := &driver.FullTextParams{Table: "blocks", Alias: "b", Match: `"common"`, Terms: []string{"common"},
			Columns: "b.id", Where: scope, Args: []any{"agent-7", "agent-7"}, Limit: 10, Owner: c.owner, Shared: c.shared}
		q, args, _ := d.FullText(p)
		rows, err := b.DB().QueryContext(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF) "+q, args...)
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
		pl := strings.Join(plan, "\n")
		t.Logf("owner %q shared %v:\n%s", c.owner, c.shared, pl)
		storeWide := strings.Contains(pl, "on blocks_fts") || strings.Contains(pl, "Seq Scan on blocks")
		byOwner := ownerCond.MatchString(pl)
		if c.byOwner && (storeWide || !byOwner) {
			t.Errorf("owner %q shared %v: plan reads a store-wide index %v, an owner-keyed one %v:\n%s", c.owner, c.shared, storeWide, byOwner, pl)
		}
		// The same rows and scores either way.
		var got []string
		rs, err := b.DB().QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatal(err)
		}
		for rs.Next() {
			var id int64
			var s float64
			if err := rs.Scan(&id, &s); err != nil {
				t.Fatal(err)
			}
			got = append(got, fmt.Sprintf("%d:%v", id, s))
		}
		rs.Close()
		if len(got) != 10 || ranked != nil && !slices.Equal(got, ranked) {
			t.Errorf("owner %q shared %v: ranked %v, the leg without the owner's index ranked %v", c.owner, c.shared, got, ranked)
		}
		ranked = got
	}
}

// Migration 0049 drops the single-column GIN indexes over fts that the
// (agent, fts) and (owner, fts) ones make redundant: every insert and
// every tsvector update maintained both. A search of every agent's rows
// ("fts @@ query" alone) still reads an index, the multicolumn one's fts
// entries, not the whole table.
func TestStoreWideFullTextUsesMulticolumnIndex(t *testing.T) {
	ctx := context.Background()
	b := openTestBackend(t)
	var ext bool
	if err := b.DB().QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM pg_extension WHERE extname = 'btree_gin')`).Scan(&ext); err != nil {
		t.Fatal(err)
	}
	if !ext {
		t.Skip("btree_gin is not available on this server: no multicolumn index, so the single-column ones stay")
	}
	var left []string
	rows, err := b.DB().QueryContext(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()
		AND indexdef LIKE '%USING gin (fts)%' ORDER BY indexname`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		left = append(left, name)
	}
	rows.Close()
	if len(left) > 0 {
		t.Errorf("single-column GIN indexes over fts beside the multicolumn ones: %v", left)
	}
	conn, err := b.DB().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, q := range []string{
		`INSERT INTO archival (agent, content, created_at, valid_from)
			SELECT 'agent-' || (i % 500), CASE WHEN i % 2 = 0 THEN 'common ' ELSE 'rare ' END || 'w' || (i % 97), i, i
			FROM generate_series(1, 5000) i`,
		`INSERT INTO archival (agent, content, created_at, valid_from) VALUES ('agent-1', 'one zebra', 0, 0)`,
		// The rows are in the GIN index's pending list, which a plan
		// would read whole; vacuum (autovacuum, in a live store) merges it.
		`VACUUM ANALYZE archival`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A rare term: the planner's own choice, no setting forcing it.
	var plan []string
	prs, err := conn.QueryContext(ctx, `EXPLAIN SELECT id FROM archival WHERE fts @@ to_tsquery('english', 'zebra')`)
	if err != nil {
		t.Fatal(err)
	}
	for prs.Next() {
		var line string
		if err := prs.Scan(&line); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, line)
	}
	prs.Close()
	p := strings.Join(plan, "\n")
	if !strings.Contains(p, "Index Scan on archival_agent_fts") {
		t.Errorf("a condition on fts alone does not read the (agent, fts) index:\n%s", p)
	}
	d := b.SearchDialect()
	q, args, _ := d.FullText(&driver.FullTextParams{Table: "archival", Alias: "a", Match: `"zebra"`, Terms: []string{"zebra"},
		Columns: "a.id", Where: "a.valid_to IS NULL", Limit: 10})
	var n int
	rs, err := conn.QueryContext(ctx, q, args...)
	if err != nil {
		t.Fatal(err)
	}
	for rs.Next() {
		n++
	}
	rs.Close()
	if n != 1 {
		t.Errorf("a store-wide full-text leg found %d entries, want the 1 with the term", n)
	}
}
