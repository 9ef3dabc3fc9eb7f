package memory_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// usageOf is what agent's rows count toward its quota, summed from the
// rows as the store lists them.
func usageOf(t *testing.T, c *memory.Store, agent string) int64 {
	t.Helper()
	ctx := context.Background()
	arch, err := c.Agent(agent).Archival().List(ctx, &memory.ArchivalQuery{IncludeSuperseded: true, Limit: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := c.Agent(agent).Messages().List(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range arch {
		meta, _ := json.Marshal(e.Metadata)
		tags, _ := json.Marshal(append([]string{}, e.Tags...))
		n += int64(len(e.Content) + len(meta) + len(tags) + 3*max(len(tags)-2, 0) + memory.UsageRowBytes)
	}
	for _, m := range msgs {
		calls := m.ToolCalls
		if calls == nil {
			calls = []memory.ToolCall{}
		}
		cj, _ := json.Marshal(calls)
		n += int64(len(m.Content) + len(m.Name) + len(m.ToolCallID) + len(cj) + memory.UsageRowBytes)
	}
	return n
}

// TestQuotaTwoStoresOneFile: two stores on one SQLite file, as two
// processes are, each with writers racing for the last of an agent's
// quota, store exactly what fits between them.
func TestQuotaTwoStoresOneFile(t *testing.T) {
	runQuotaTwoStores(t, filepath.Join(t.TempDir(), "quota.db"))
}

// TestQuotaTwoStoresOnePostgres is TestQuotaTwoStoresOneFile on
// PostgreSQL.
func TestQuotaTwoStoresOnePostgres(t *testing.T) {
	runQuotaTwoStores(t, pgtest.Start(t).NewDatabase(t))
}

func runQuotaTwoStores(t *testing.T, target string) {
	ctx := context.Background()
	const fits, writers = 10, 4
	entry := memory.ArchivalEntry{Content: strings.Repeat("q", 740)} // 1000 bytes
	opts := &memory.Options{AgentQuotaBytes: fits*1000 + 500}
	stores := []*memory.Store{openFile(t, target, opts), openFile(t, target, opts)}
	for round := range 10 { // a fresh race for each agent
		agent := fmt.Sprint("a", round)
		var (
			wg       sync.WaitGroup
			mu       sync.Mutex
			ok, full int
		)
		for w := range writers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := stores[w%2]
				for i := range fits {
					e := entry
					e.Content = fmt.Sprintf("%04d", w*fits+i) + e.Content[4:] // one text each
					_, err := s.Agent(agent).Archival().Insert(ctx, e)
					mu.Lock()
					switch {
					case err == nil:
						ok++
					case errors.Is(err, memory.ErrQuota):
						full++
					default:
						t.Errorf("writer %d: %v", w, err)
					}
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if ok != fits || full != (writers-1)*fits {
			t.Fatalf("agent %s: %d inserts stored, %d refused; want %d and %d", agent, ok, full, fits, (writers-1)*fits)
		}
		for i, s := range stores {
			used, err := s.Agent(agent).StorageUsed(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if want := usageOf(t, s, agent); used != want || used != fits*1000 {
				t.Fatalf("agent %s, store %d: StorageUsed %d, rows %d, want %d", agent, i, used, want, fits*1000)
			}
		}
	}
}

// countingEmbedder counts the texts it is asked to embed.
type countingEmbedder struct {
	search.Embedder
	texts atomic.Int64
}

func (e *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	e.texts.Add(int64(len(texts)))
	return e.Embedder.Embed(ctx, texts)
}

// TestQuotaRefusesBeforeEmbedding: once an agent's quota is full, its
// archival inserts, batches and message appends are refused without
// sending their text to the embedder.
func TestQuotaRefusesBeforeEmbedding(t *testing.T) {
	ctx := context.Background()
	emb := &countingEmbedder{Embedder: search.NewOffline(16)}
	c := openFile(t, filepath.Join(t.TempDir(), "q.db"), &memory.Options{Embedder: emb, AgentQuotaBytes: 2000})
	entry := memory.ArchivalEntry{Content: strings.Repeat("q", 740)} // 1000 bytes
	for i := range 2 {
		e := entry
		e.Content = fmt.Sprint(i) + e.Content[1:] // one text each
		if _, err := c.Agent("a").Archival().Insert(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	before := emb.texts.Load()
	if _, err := c.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "one more"}); !errors.Is(err, memory.ErrQuota) {
		t.Fatalf("InsertArchival: %v, want ErrQuota", err)
	}
	if _, err := c.Agent("a").Archival().InsertBatch(ctx, []memory.ArchivalEntry{{Content: "x"}, {Content: "y"}}, nil); !errors.Is(err, memory.ErrQuota) {
		t.Fatalf("InsertArchivalBatch: %v, want ErrQuota", err)
	}
	if _, err := c.Agent("a").Messages().Append(ctx, memory.Message{Role: memory.RoleUser, BatchID: "b", Content: "hi"}); !errors.Is(err, memory.ErrQuota) {
		t.Fatalf("AppendMessage: %v, want ErrQuota", err)
	}
	if n := emb.texts.Load() - before; n != 0 {
		t.Fatalf("refused writes sent %d texts to the embedder", n)
	}
}

// TestUsageMigrationSQLite: a store written before the usage counter
// (schema version 24) gets every agent's count from migration 0025.
func TestUsageMigrationSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "old.db")
	c := openFile(t, path, nil)
	c.Close()
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range append(append(slices.Clip(rollBackAgentUsage), `PRAGMA user_version = 24`), oldRows...) {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	db.Close()
	checkMigratedUsage(t, openFile(t, path, nil))
}

// rollBackAgentUsage undoes SQLite migrations 0029 and 0028 (rollBackArchivalLabels),
// 0027 (rollBackDedup) and 0025.
var rollBackAgentUsage = append(append(slices.Clip(rollBackArchivalLabels), rollBackDedup...), []string{
	`DROP TRIGGER agent_usage_archival_ai`, `DROP TRIGGER agent_usage_archival_ad`, `DROP TRIGGER agent_usage_archival_au`,
	`DROP TRIGGER agent_usage_messages_ai`, `DROP TRIGGER agent_usage_messages_ad`, `DROP TRIGGER agent_usage_messages_au`,
	`DROP TABLE agent_usage`,
}...)

// TestUsageMigrationPostgres: a database written before the usage counter
// gets every agent's count from migration 0021.
func TestUsageMigrationPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, err := filepath.Glob("../migrations/postgres/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	n := slices.IndexFunc(files, func(f string) bool { return strings.HasSuffix(f, "_agent_usage.sql") })
	if n < 0 {
		t.Fatalf("no agent_usage migration in %v", files)
	}
	for _, f := range files[:n] {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, q := range append([]string{
		`CREATE TABLE engram_schema (version BIGINT NOT NULL)`,
		fmt.Sprintf(`INSERT INTO engram_schema (version) VALUES (%d)`, n),
	}, oldRows...) {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	checkMigratedUsage(t, openFile(t, dsn, nil))
}

// oldRows are rows written before the usage counter, in the SQL both
// engines take: two agents, multi-byte text, a superseded entry, tool
// calls.
var oldRows = []string{
	`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES
		('a', 'Ada lives in Lóndon', '{"source":"chat"}', '["person","place"]', 'person place', 1, 1, 2),
		('a', 'Ada moved to Paris — for good', '{}', '[]', '', 2, 2, NULL),
		('b', 'Bob''s note', '{"k":[1,2,3]}', '["x"]', 'x', 3, 3, NULL)`,
	`INSERT INTO messages (agent, role, content, name, tool_calls_json, tool_call_id, batch_id, seq, created_at) VALUES
		('a', 'user', 'héllo', '', '[]', '', 's1', 1, 1),
		('a', 'assistant', '', '', '[{"id":"c1","name":"lookup","arguments":{"q":"x"}}]', '', 's1', 2, 2),
		('a', 'tool', 'found it', 'lookup', '[]', 'c1', 's1', 3, 3),
		('c', 'user', 'only messages', '', '[]', '', 's1', 1, 4)`,
}

func checkMigratedUsage(t *testing.T, c *memory.Store) {
	t.Helper()
	ctx := context.Background()
	for _, agent := range []string{"a", "b", "c", "nobody"} {
		used, err := c.Agent(agent).StorageUsed(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := usageOf(t, c, agent); used != want {
			t.Errorf("after the migration, %q uses %d bytes, want %d", agent, used, want)
		}
	}
	// The triggers count from there on.
	if _, err := c.Agent("a").Archival().Insert(ctx, memory.ArchivalEntry{Content: "after the migration"}); err != nil {
		t.Fatal(err)
	}
	if used, _ := c.Agent("a").StorageUsed(ctx); used != usageOf(t, c, "a") {
		t.Errorf("after an insert, %q uses %d bytes, want %d", "a", used, usageOf(t, c, "a"))
	}
}

// usageInSQL is agent's count as the rows hold it, by the formula both
// engines' usage migrations start from.
func usageInSQL(t *testing.T, db *sql.DB, agent string) int64 {
	t.Helper()
	var n int64
	err := db.QueryRow(`SELECT COALESCE((SELECT SUM(octet_length(content) + octet_length(metadata_json)
			+ octet_length(tags_json) + 3 * CASE WHEN octet_length(tags_json) > 2 THEN octet_length(tags_json) - 2 ELSE 0 END + 256)
			FROM archival WHERE agent = '` + agent + `'), 0)
		+ COALESCE((SELECT SUM(octet_length(content) + octet_length(name) + octet_length(tool_calls_json) + octet_length(tool_call_id) + 256)
			FROM messages WHERE agent = '` + agent + `'), 0)`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// An agent's count follows UPDATEs written by hand: of one row or many,
// of each counted column, moving rows to another agent, and of columns
// that count nothing (re-indexing sets only those).
func TestUsageFollowsHandUpdates(t *testing.T) {
	ctx := context.Background()
	targets := map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return filepath.Join(t.TempDir(), "usage.db") },
		"postgres": func(t *testing.T) string { return pgtest.Start(t).NewDatabase(t) },
	}
	for engine, target := range targets {
		t.Run(engine, func(t *testing.T) {
			target := target(t)
			c, err := memory.Open(ctx, target, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, agent := range []string{"a", "b"} {
				for i := range 3 {
					if _, err := c.Agent(agent).Archival().Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprintf("%s entry %d", agent, i),
						Metadata: map[string]any{"session": 1}, Tags: []string{"t"}}); err != nil {
						t.Fatal(err)
					}
					if _, err := c.Agent(agent).Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: fmt.Sprintf("%s message %d", agent, i), BatchID: "s"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			driver := sqlitedriver.Name
			if engine == "postgres" {
				driver = "pgx"
			}
			db, err := sql.Open(driver, target)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			for _, q := range []string{
				`UPDATE archival SET content = content || ' grown by hand' WHERE agent = 'a'`,
				`UPDATE archival SET metadata_json = '{"session": 1, "note": "a longer value"}', tags_json = '["t","u","v"]' WHERE id = (SELECT min(id) FROM archival WHERE agent = 'a')`,
				`UPDATE archival SET tags_json = '[]' WHERE agent = 'b'`,
				`UPDATE messages SET content = 'short', name = 'lookup', tool_call_id = 'c9' WHERE agent = 'a'`,
				`UPDATE messages SET tool_calls_json = '[{"id":"c1","name":"n","arguments":{}}]' WHERE id = (SELECT max(id) FROM messages WHERE agent = 'b')`,
				`UPDATE messages SET agent = 'b', batch_id = 'moved' WHERE id = (SELECT min(id) FROM messages WHERE agent = 'a')`,
				`UPDATE archival SET agent = 'b', content = 'moved and rewritten' WHERE id = (SELECT max(id) FROM archival WHERE agent = 'a')`,
				`UPDATE archival SET agent = 'a' WHERE agent = 'b'`,
				`UPDATE archival SET valid_to = 5 WHERE id = (SELECT min(id) FROM archival WHERE agent = 'a')`,
				`UPDATE messages SET content = content, created_at = created_at + 1 WHERE agent = 'b'`,
			} {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				for _, agent := range []string{"a", "b"} {
					used, err := c.Agent(agent).StorageUsed(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if want := usageInSQL(t, db, agent); used != want {
						t.Errorf("after %s: %q uses %d bytes, the rows hold %d", q, agent, used, want)
					}
				}
			}
		})
	}
}
