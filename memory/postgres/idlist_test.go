package postgres_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/engram-go/engram/memory/postgres"
)

// Searches read rows by id through the dialect's id list (a hit's row, its
// session key) and a build reads token counts by hash, a few at a time. On
// a table of a few thousand rows the planner hashed a scan of the whole
// table into each such read when it took the list to return
// json_array_elements_text's 100 rows: an agent's search then read every
// agent's rows, generic plan or not. A short list's join must probe the
// table's index by the id; a long list, worded as the planner can hash,
// must read the same rows.
func TestIDListJoinsSeekTheIndex(t *testing.T) {
	ctx := context.Background()
	db := migratedDB(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Rows of 50 agents, loaded without the triggers (the plans are the
	// subject, not the indexing), then analyzed.
	for _, q := range []string{
		`SET session_replication_role = replica`,
		`INSERT INTO archival (agent, content, created_at, valid_from)
			SELECT 'agent-' || (g % 50), 'entry ' || g, g, g FROM generate_series(1, 6000) g`,
		`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			SELECT 'agent-' || (g % 50), 'user', 'message ' || g, 'b' || (g / 20), g, g FROM generate_series(1, 6000) g`,
		`INSERT INTO token_counts (encoding, hash, tokens) SELECT 'cl100k', g, g % 7 FROM generate_series(1, 6000) g`,
		`SET session_replication_role = DEFAULT`,
		`ANALYZE archival`, `ANALYZE messages`, `ANALYZE token_counts`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	few := []int64{17, 2040, 3999, 5001, 5999, 9999} // the last one gone
	var many []int64
	for i := range 500 {
		many = append(many, int64(i*11%7000+1))
	}
	queries := func(n int) []struct{ table, query string } {
		from, id := postgres.SearchDialect{}.IDList(n)
		return []struct{ table, query string }{
			{"archival", `SELECT a.id FROM ` + from + ` JOIN archival a ON a.id = ` + id},
			{"messages", `SELECT a.id FROM ` + from + ` JOIN messages a ON a.id = ` + id},
			{"token_counts", `SELECT hash FROM token_counts WHERE encoding = 'cl100k' AND hash IN (` + (&postgres.Backend{}).JSONInt64s(n) + `)`},
		}
	}
	prepared := 0
	prepare := func(q string) string {
		t.Helper()
		prepared++
		name := fmt.Sprint("idlist_", prepared)
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+`(text) AS `+strings.Replace(q, "?", "$1", 1)); err != nil {
			t.Fatalf("prepare %s: %v", q, err)
		}
		return name
	}
	lines := func(q string, args ...any) []string {
		t.Helper()
		rows, err := conn.QueryContext(ctx, q, args...)
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	read := func(name string, ids []int64) []string {
		t.Helper()
		list, _ := json.Marshal(ids)
		got := lines(`EXECUTE ` + name + `('` + string(list) + `')`)
		slices.Sort(got)
		return got
	}
	want := func(table string, ids []int64) []string {
		t.Helper()
		col := "id"
		if table == "token_counts" {
			col = "hash"
		}
		list, _ := json.Marshal(ids)
		got := lines(`SELECT `+col+`::text FROM `+table+` WHERE `+col+` = ANY($1::bigint[])`, strings.NewReplacer("[", "{", "]", "}").Replace(string(list)))
		slices.Sort(got)
		return got
	}
	for _, mode := range []string{"force_generic_plan", "force_custom_plan"} {
		if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = `+mode); err != nil {
			t.Fatal(err)
		}
		for _, tc := range queries(len(few)) {
			name := prepare(tc.query)
			list, _ := json.Marshal(few)
			p := strings.Join(lines(`EXPLAIN EXECUTE `+name+`('`+string(list)+`')`), "\n")
			key := "(id = (j.value)::bigint)"
			if tc.table == "token_counts" {
				key = "(hash = (j.value)::bigint)"
			}
			if !strings.Contains(p, "Index Cond: ") || !strings.Contains(p, key) || strings.Contains(p, "Seq Scan on "+tc.table) {
				t.Errorf("%s, %s: reading %d rows by id does not probe the index by id (%s):\n%s", tc.table, mode, len(few), key, p)
			}
			if got, w := read(name, few), want(tc.table, few); !slices.Equal(got, w) || len(w) != len(few)-1 {
				t.Errorf("%s, %s: read %v, want %v", tc.table, mode, got, w)
			}
		}
		for _, tc := range queries(len(many)) {
			if got, w := read(prepare(tc.query), many), want(tc.table, many); !slices.Equal(got, w) || len(w) < 400 {
				t.Errorf("%s, %s, %d ids: read %d rows, want %d", tc.table, mode, len(many), len(got), len(w))
			}
		}
	}
}
