package postgres_test

import (
	"context"
	"crypto/md5"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

func messageIDs(t *testing.T, s *memory.Store, agent, query string) []int64 {
	t.Helper()
	res, err := s.Agent(agent).Search(context.Background(), query, search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(100))
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, r := range res {
		out = append(out, r.ID)
	}
	return out
}

// TestMessageContextUpgradePostgres: a database written before messages
// were indexed in context (schema version 9, generated tsvector) is
// migrated with its messages re-indexed in context, the GIN index back,
// and the text cache loading it, a message at the end of seq's range
// included.
func TestMessageContextUpgradePostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, err := filepath.Glob("../../migrations/postgres/*.sql")
	if err != nil || len(files) < 10 {
		t.Fatalf("migrations: %v %v", files, err)
	}
	sort.Strings(files)
	for _, f := range files[:9] {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	for _, q := range []string{
		`CREATE TABLE engram_schema (version BIGINT NOT NULL)`,
		`INSERT INTO engram_schema (version) VALUES (9)`,
		`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES
			('a', 'user', 'I adopted a greyhound called Comet.', 's1', 1, 1),
			('a', 'assistant', 'What a lovely name!', 's1', 2, 2),
			('a', 'user', 'Something else entirely.', 's2', 1, 3),
			('a', 'user', 'The penultimate albatross.', 'edge', 9223372036854775806, 4),
			('a', 'user', 'The last word.', 'edge', 9223372036854775807, 5),
			('b', 'user', 'Greyhounds of another agent.', 's1', 3, 6)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var ids []int64
	rows, err := db.QueryContext(ctx, `SELECT id FROM messages ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	rows.Close()

	for _, mode := range []struct {
		name string
		opts *memory.Options
	}{{"sql", &memory.Options{TextCacheBytes: -1}}, {"text cache", nil}} {
		c, err := memory.Open(ctx, dsn, mode.opts)
		if err != nil {
			t.Fatalf("%s: open (migrate): %v", mode.name, err)
		}
		if mode.opts == nil {
			if err := storeaccess.Index(c).WarmTextCache(ctx); err != nil {
				t.Fatalf("%s: %v", mode.name, err)
			}
		}
		for _, tc := range []struct {
			query string
			want  []int64
		}{
			{"greyhound", []int64{ids[0], ids[1]}},
			{"albatross", []int64{ids[3], ids[4]}},
			{"last word", []int64{ids[4], ids[3]}},
		} {
			if got := messageIDs(t, c, "a", tc.query); !slices.Equal(got, tc.want) {
				t.Errorf("%s: after the migration, %q found %v, want %v", mode.name, tc.query, got, tc.want)
			}
		}
		c.Close()
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'messages' AND indexdef LIKE '%USING gin%fts)'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("GIN indexes over messages.fts after the migration (messages_fts, or the (agent, fts) one that replaces it): %d (%v)", n, err)
	}
}

// TestMessageContextLargeNeighboursPostgres: a tsvector holds at most 1 MB
// of lexemes, so a message's own words and its neighbours' may not all fit
// in one. A message that can be stored alone is stored beside large
// neighbours too (their words left out of its context), and is found by
// its own words.
func TestMessageContextLargeNeighboursPostgres(t *testing.T) {
	ctx := context.Background()
	c, err := memory.Open(ctx, pgtest.Start(t).NewDatabase(t), &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	big := func(salt string) string {
		w := make([]string, 20_000) // some 800 kB of tsvector: one fits, two do not
		for i := range w {
			w[i] = fmt.Sprintf("%x", md5.Sum([]byte(fmt.Sprint(salt, i))))
		}
		return strings.Join(w, " ")
	}
	msgs := []memory.Message{
		{Role: memory.RoleTool, BatchID: "t", Content: "zebra " + big("one")},
		{Role: memory.RoleTool, BatchID: "t", Content: "yak " + big("two")},
		{Role: memory.RoleAssistant, BatchID: "t", Content: "the walrus summary"},
	}
	var out []memory.Message
	for _, m := range msgs {
		m, err := c.Agent("a").Messages().Append(ctx, m)
		if err != nil {
			t.Fatalf("append beside a large neighbour: %v", err)
		}
		out = append(out, m)
	}
	for _, tc := range []struct {
		query string
		want  int64
	}{{"zebra", out[0].ID}, {"yak", out[1].ID}, {"walrus", out[2].ID}} {
		if got := messageIDs(t, c, "a", tc.query); len(got) == 0 || got[0] != tc.want {
			t.Errorf("%q found %v, want %d first", tc.query, got, tc.want)
		}
	}
}

// TestMessageContextFollowsHandEditsPostgres: messages written out of seq
// order, several in one INSERT, then changed by hand (seq, batch, agent,
// content, many rows per statement) and deleted: every message's tsvector
// is what engram_message_fts computes from the rows, and a text cache
// kept up through the log (another pool writes) matches the same rows as
// the tsvector query.
func TestMessageContextFollowsHandEditsPostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	sqlc, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlc.Close()
	cached, err := memory.Open(ctx, dsn, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cached.Close()
	if err := storeaccess.Index(cached).WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(7, 9))
	vocab := strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango
		nectar olive peach quince radish sage thyme`)
	text := func() string {
		w := make([]string, 1+r.IntN(5))
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	for _, agent := range []string{"a", "b"} {
		for _, s := range []int{5, 1, 3, 2, 4, 9, 7, 8} {
			if _, err := db.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES ($1, 'user', $2, $3, $4, $5)`, agent, text(), []string{"s1", "s2"}[s%2], s, s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES
		('a', 'user', $1, 's3', 2, 1), ('a', 'user', $2, 's3', 1, 1), ('a', 'user', $3, 's3', 3, 1),
		('a', 'user', $4, 'edge', 9223372036854775807, 1), ('a', 'user', $5, 'edge', 9223372036854775806, 1),
		('a', 'user', $6, 'floor', -9223372036854775808, 1), ('a', 'user', $7, 'floor', -9223372036854775807, 1)`,
		text(), text(), text(), text(), text(), text(), text()); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		var stale []int64
		rows, err := db.QueryContext(ctx, `SELECT id FROM messages
			WHERE fts IS DISTINCT FROM engram_message_fts(agent, batch_id, seq, content, created_at) ORDER BY id`)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				t.Fatal(err)
			}
			stale = append(stale, id)
		}
		rows.Close()
		if len(stale) > 0 {
			t.Fatalf("after %s: messages %v hold a tsvector other than their context's", step, stale)
		}
		for _, agent := range []string{"a", "b"} {
			for _, q := range vocab {
				want, got := messageIDs(t, sqlc, agent, q), messageIDs(t, cached, agent, q)
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(want, got) {
					t.Fatalf("after %s, %s %q: tsvector query found %v, text cache %v", step, agent, q, want, got)
				}
			}
		}
	}
	check("inserts")
	for _, q := range []string{
		`UPDATE messages SET content = 'quince quince ' || content WHERE seq = 3`,
		`UPDATE messages SET content = content || ' sage ' || seq WHERE agent = 'a' AND batch_id = 's1'`,
		`UPDATE messages SET content = 'kale', seq = seq + 20 WHERE agent = 'b' AND batch_id = 's2' AND seq IN (1, 3, 5)`,
		`UPDATE messages SET seq = seq + 100 WHERE agent = 'a' AND batch_id = 's2' AND seq IN (3, 5)`,
		`UPDATE messages SET seq = 6 WHERE agent = 'a' AND batch_id = 's2' AND seq = 105`,
		`UPDATE messages SET seq = 2 WHERE agent = 'a' AND batch_id = 's2' AND seq = 103`,
		`UPDATE messages SET batch_id = 's2' WHERE agent = 'b' AND seq = 1`,
		`UPDATE messages SET agent = 'b', batch_id = 's3', seq = 4 WHERE agent = 'a' AND batch_id = 's3' AND seq = 3`,
		`UPDATE messages SET agent = 'a' WHERE agent = 'b' AND batch_id = 's2' AND seq = 8`,
		`UPDATE messages SET seq = seq - 10 WHERE agent = 'a' AND batch_id = 'edge'`,
		`UPDATE messages SET created_at = created_at + 1, role = 'assistant' WHERE seq % 2 = 0`,
		`DELETE FROM messages WHERE agent = 'a' AND batch_id = 's3' AND seq = 2`,
		`DELETE FROM messages WHERE agent = 'b' AND batch_id = 's1'`,
		`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ('a', 'user', 'peach iris', 's1', 3, 9)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		check(q)
	}
}
