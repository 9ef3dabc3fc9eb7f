package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// The statements the write triggers run are planned once per session
// and kept (PL/pgSQL caches a generic plan), so a plan made while a
// table was empty is the plan its writes use until the next ANALYZE. A
// shape with two plans, a sequential scan for an empty table and an
// index for a full one, then reads the whole table on every write: an
// archival insert of a new database cost 16 ms at 8,000 entries, 13×
// the same insert planned later. Here every plan is generic and made on
// empty tables (plan_cache_mode on the store's connections), and the
// writes that follow must not read the tables they write sequentially:
// fewer tuples read by sequential scans than rows written.
func TestWritesPlannedOnEmptyTablesReadNoTableWhole(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("plan_cache_mode", "force_generic_plan")
	u.RawQuery = q.Encode()
	st, err := memory.Open(ctx, u.String(), &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	const agents, n = 2, 150
	var ids []int64
	for a := range agents {
		ag := st.Agent(fmt.Sprint("agent-", a))
		if _, err := ag.CreateBlock(ctx, memory.BlockSpec{Label: "notes", CharLimit: 1 << 20}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		for a := range agents {
			ag := st.Agent(fmt.Sprint("agent-", a))
			line := fmt.Sprintf("note %d of agent %d: the tide turned at the harbour", i, a)
			e, err := ag.Archival().Insert(ctx, memory.ArchivalEntry{Content: line})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, e.ID)
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
	}
	for i, id := range ids[len(ids)/2:] {
		ag := st.Agent(fmt.Sprint("agent-", i%agents))
		if i%2 == 0 {
			if _, err := ag.Archival().Supersede(ctx, id, memory.ArchivalEntry{Content: fmt.Sprint("rewritten ", i)}); err != nil {
				t.Fatal(err)
			}
		} else if err := ag.Archival().Delete(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
	st.Close()

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// A backend's counters reach the shared statistics when it exits.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var others int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d backends of the store still connected", others)
		}
		time.Sleep(50 * time.Millisecond)
	}
	rows, err := db.QueryContext(ctx, `SELECT relname, seq_scan, seq_tup_read, n_tup_ins FROM pg_stat_user_tables
		WHERE relname IN ('archival', 'messages', 'blocks', 'block_changes') ORDER BY relname`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var rel string
		var scans, read, ins int64
		if err := rows.Scan(&rel, &scans, &read, &ins); err != nil {
			t.Fatal(err)
		}
		seen++
		t.Logf("%s: %d rows written, %d sequential scans read %d tuples", rel, ins, scans, read)
		if read >= ins {
			t.Errorf("%s: sequential scans read %d tuples for %d rows written: a write's plan reads the table whole", rel, read, ins)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if seen == 0 {
		t.Fatal("no table statistics read")
	}
}
