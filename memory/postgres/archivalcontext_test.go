package postgres_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

func archivalIDs(t *testing.T, s *memory.Store, agent, query string) []int64 {
	t.Helper()
	res, err := s.Agent(agent).Search(context.Background(), query,
		search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(true).Limit(100))

	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for _, r := range res {
		out = append(out, r.ID)
	}
	return out
}

// TestArchivalContextUpgradePostgres: a database written before archival
// entries were indexed in their conversation is migrated with the entries
// that name one re-indexed with their neighbours, the others' tsvectors
// (and so their ts_rank) exactly as they were, the GIN indexes kept, and
// the text cache loading it.
func TestArchivalContextUpgradePostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgtest.Start(t).NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	files, err := filepath.Glob("../../migrations/postgres/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	n := slices.IndexFunc(files, func(f string) bool { return strings.HasSuffix(f, "_archival_conversation.sql") })
	if n < 0 {
		t.Fatalf("no archival_conversation migration in %v", files)
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
	for _, q := range []string{
		`CREATE TABLE engram_schema (version BIGINT NOT NULL)`,
		fmt.Sprintf(`INSERT INTO engram_schema (version) VALUES (%d)`, n),
		`INSERT INTO archival (agent, content, metadata_json, tags_text, created_at, valid_from) VALUES
			('a', 'I adopted a greyhound called Comet.', '{"session": "s1"}', '', 1, 1),
			('a', 'Something else entirely.', '{"session": "s2"}', 'misc', 2, 2),
			('a', 'What a lovely name!', '{"session": "s1"}', '', 3, 3),
			('a', 'A lonely albatross.', '{"session": 5}', '', 4, 4),
			('a', 'Lovely weather for an albatross.', '{"topic": "birds"}', 'birds', 5, 5),
			('b', 'Greyhounds of another agent.', '{"session": "s1"}', '', 6, 6)`,
		`CREATE TABLE before_fts AS SELECT id, fts FROM archival`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	var ids []int64
	rows, err := db.QueryContext(ctx, `SELECT id FROM archival ORDER BY id`)
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
			{"greyhound", []int64{ids[0], ids[2]}}, // the reply by its neighbour's word
			{"lovely", []int64{ids[2], ids[4], ids[0]}},
			{"albatross", []int64{ids[3], ids[4]}},
			{"else", []int64{ids[1]}}, // another session lends nothing
		} {
			// The text cache ranks by BM25, the tsvector query by ts_rank:
			// the same rows, not necessarily in the same order.
			got := archivalIDs(t, c, "a", tc.query)
			slices.Sort(got)
			slices.Sort(tc.want)
			if !slices.Equal(got, tc.want) {
				t.Errorf("%s: after the migration, %q found %v, want %v", mode.name, tc.query, got, tc.want)
			}
		}
		c.Close()
	}
	var changed []int64
	rows, err = db.QueryContext(ctx, `SELECT a.id FROM archival a JOIN before_fts b ON b.id = a.id
		WHERE a.fts IS DISTINCT FROM b.fts ORDER BY a.id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		changed = append(changed, id)
	}
	rows.Close()
	if want := []int64{ids[0], ids[2]}; !slices.Equal(changed, want) {
		t.Fatalf("the migration changed the tsvectors of %v, want only the two entries with a neighbour %v", changed, want)
	}
	var idx int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM pg_indexes WHERE tablename = 'archival' AND indexdef LIKE '%USING gin%fts)'`).Scan(&idx); err != nil || idx != 1 {
		t.Fatalf("GIN indexes over archival.fts after the migration (archival_fts, or the (agent, fts) one that replaces it): %d (%v)", idx, err)
	}
}

// TestArchivalContextFollowsHandEditsPostgres: entries inserted with
// explicit ids out of order and several per statement, then changed by
// hand (conversation moved or dropped, content, owner, id) and deleted or
// superseded: after each step every entry's tsvector is what its
// conversation gives it, and the text cache (kept up to date by the log)
// finds the rows the tsvector query finds.
func TestArchivalContextFollowsHandEditsPostgres(t *testing.T) {
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
	r := rand.New(rand.NewPCG(11, 13))
	vocab := strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango
		nectar olive peach quince radish sage thyme`)
	text := func() string {
		w := make([]string, 1+r.IntN(5))
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return strings.Join(w, " ")
	}
	metas := []string{`{"session": "s1"}`, `{"session": "s2"}`, `{"conversation": "s1"}`, `{}`, `{"session": 1}`}
	for _, agent := range []string{"a", "b"} {
		for i, id := range []int64{50, 10, 30, 20, 40, 90, 70, 80, 60, 15, 35, 25} {
			if agent == "b" {
				id += 1000
			}
			// 20 seconds an id apart: the entries naming no conversation
			// are a stream, neighbours in write order.
			at := (id % 1000) * int64(20*time.Second)
			if _, err := db.ExecContext(ctx, `INSERT INTO archival (id, agent, content, metadata_json, created_at, valid_from)
				VALUES ($1, $2, $3, $4, $5, $5)`, id, agent, text(), metas[i%len(metas)], at); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO archival (id, agent, content, metadata_json, created_at, valid_from) VALUES
		(5, 'a', $1, '{"session": "s1"}', 0, 0), (3, 'a', $2, '{"session": "s1"}', 0, 0), (4, 'a', $3, '{"session": "s1"}', 0, 0)`,
		text(), text(), text()); err != nil {
		t.Fatal(err)
	}
	check := func(step string) {
		t.Helper()
		var stale []int64
		rows, err := db.QueryContext(ctx, `SELECT id FROM archival
			WHERE fts IS DISTINCT FROM engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at) ORDER BY id`)
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
			t.Fatalf("after %s: entries %v hold a tsvector other than their conversation's", step, stale)
		}
		for _, agent := range []string{"a", "b"} {
			for _, q := range vocab {
				want, got := archivalIDs(t, sqlc, agent, q), archivalIDs(t, cached, agent, q)
				slices.Sort(want)
				slices.Sort(got)
				if !slices.Equal(want, got) {
					t.Fatalf("after %s, %s %q: tsvector query found %v, text cache %v", step, agent, q, want, got)
				}
			}
		}
	}
	check("inserts")
	var withContext int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM archival
		WHERE fts IS DISTINCT FROM (setweight(to_tsvector('english', content), 'B') ||
			setweight(to_tsvector('english', tags_text), 'A') ||
			setweight(jsonb_to_tsvector('english', metadata_json::jsonb, '["string", "numeric"]'), 'C'))`).Scan(&withContext); err != nil || withContext < 10 {
		t.Fatalf("%d entries with context (%v): the corpus does not exercise it", withContext, err)
	}
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM archival_links l JOIN archival a ON a.id = l.id
		WHERE engram_archival_conversation(a.metadata_json) IS NULL AND (before_id IS NOT NULL OR after_id IS NOT NULL)`).Scan(&withContext); err != nil || withContext < 4 {
		t.Fatalf("%d entries naming no conversation with neighbours (%v): the corpus does not exercise the stream", withContext, err)
	}
	for _, q := range []string{
		// created_at moved by hand: out of the gap, into a burst, back.
		`UPDATE archival SET created_at = created_at + 3600000000000 WHERE id IN (20, 1040)`,
		`UPDATE archival SET created_at = created_at + 500000000 WHERE id % 9 = 0`,
		`UPDATE archival SET created_at = created_at - 3600000000000 WHERE id = 20`,
		`UPDATE archival SET content = content || ' zucchini' WHERE id % 3 = 0`,
		`UPDATE archival SET metadata_json = '{"session": "s2"}' WHERE id IN (30, 1030, 4)`,
		`UPDATE archival SET metadata_json = '{"topic": "none"}' WHERE id IN (20, 1040)`,
		// The same metadata values under a key naming no conversation.
		`UPDATE archival SET metadata_json = '{"topic": "s1"}' WHERE metadata_json = '{"session": "s1"}' AND id % 2 = 0`,
		`UPDATE archival SET metadata_json = '{"conversation": "s1", "session": "s2"}' WHERE id % 7 = 0`,
		`UPDATE archival SET valid_to = created_at + 1 WHERE id % 4 = 0`,
		// Restored, moved (a merged entry's place), moved back.
		`UPDATE archival SET valid_to = NULL WHERE id % 8 = 0`,
		`UPDATE archival SET conversation_pos = 1 WHERE id IN (70, 90, 1070)`,
		`UPDATE archival SET conversation_pos = 26 WHERE id = 80`,
		`UPDATE archival SET conversation_pos = NULL WHERE id = 90`,
		`UPDATE archival SET valid_to = 1, conversation_pos = 2 WHERE id = 15`,
		`UPDATE archival SET tags_json = '["kale"]', tags_text = 'kale' WHERE id % 5 = 0`,
		`UPDATE archival SET agent = 'b' WHERE id = 50`,
		`UPDATE archival SET id = 55 WHERE id = 60`,
		`UPDATE archival SET id = 12, content = 'apple apple', metadata_json = '{"session": "s1"}' WHERE id = 1080`,
		`DELETE FROM archival WHERE id IN (10, 35, 1025)`,
		`DELETE FROM archival WHERE agent = 'a' AND id % 2 = 1`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		check(q)
	}
}
