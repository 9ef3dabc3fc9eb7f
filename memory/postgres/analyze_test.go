package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
)

// The growth analyzer analyzes only the tables its role owns. A role the
// application was granted its rights on (not the owner) cannot analyze
// them: PostgreSQL skips the table with a warning, and the analyzer
// would ask again every two seconds, filling the server's log. The
// owner's pass over the same grown table analyzes it, so the non-owner's
// silence is the predicate's, not a table that had not grown.
func TestGrowthAnalyzerLeavesOthersTablesAlone(t *testing.T) {
	ctx := context.Background()
	srv := pgtest.Start(t)
	dsn := srv.NewRoleDatabase(t) // the owner: a role without superuser rights
	st, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()

	owner, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer owner.Close()
	// Rows no store writes meanwhile (no analyzer of a store runs).
	if _, err := owner.ExecContext(ctx, `INSERT INTO agent_usage (agent, bytes) SELECT 'agent-' || i, i FROM generate_series(1, 300) i`); err != nil {
		t.Fatal(err)
	}
	// The server counts the rows once the inserting backend reports them.
	deadline := time.Now().Add(30 * time.Second)
	for {
		var live int64
		if err := owner.QueryRowContext(ctx, `SELECT n_live_tup FROM pg_stat_user_tables WHERE relname = 'agent_usage' AND schemaname = current_schema()`).Scan(&live); err != nil {
			t.Fatal(err)
		}
		if live >= 300 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("agent_usage counted %d live rows of 300 after 30 s", live)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// A role with no rights but to connect (PUBLIC's).
	su, err := sql.Open("pgx", srv.SuperuserURL(t, dsn))
	if err != nil {
		t.Fatal(err)
	}
	defer su.Close()
	other := fmt.Sprintf("engram_other_%d", time.Now().UnixNano())
	if _, err := su.ExecContext(ctx, `CREATE ROLE `+other+` LOGIN`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = su.ExecContext(context.Background(), `DROP ROLE IF EXISTS `+other) })
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.User(other)

	analyzed := func() bool {
		t.Helper()
		var at sql.NullTime
		if err := owner.QueryRowContext(ctx, `SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'agent_usage' AND schemaname = current_schema()`).Scan(&at); err != nil {
			t.Fatal(err)
		}
		return at.Valid
	}
	pass := func(url string) []string {
		t.Helper()
		cfg, err := pgx.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var notices []string
		cfg.OnNotice = func(_ *pgconn.PgConn, n *pgconn.Notice) {
			mu.Lock()
			notices = append(notices, n.Severity+": "+n.Message)
			mu.Unlock()
		}
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if err := analyzeGrown(ctx, conn); err != nil {
			t.Fatalf("analyzer pass as %s: %v", cfg.User, err)
		}
		mu.Lock()
		defer mu.Unlock()
		return notices
	}

	if n := pass(u.String()); len(n) > 0 {
		t.Errorf("a role that owns no table: the analyzer's pass drew %d notices: %q", len(n), n)
	}
	if analyzed() {
		t.Fatal("agent_usage analyzed by a role that does not own it")
	}
	if n := pass(dsn); len(n) > 0 {
		t.Errorf("the owner's pass drew notices: %q", n)
	}
	if !analyzed() {
		t.Fatal("the owner's pass left the grown agent_usage unanalyzed: the other role's pass proved nothing")
	}
}
