package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	pgbackend "github.com/engram-go/engram/memory/postgres"
	"github.com/engram-go/engram/search"
)

// On PostgreSQL entries naming no conversation take their neighbours in
// write order within the time gap as on SQLite: archival_links gives the
// stream scenario's, each entry's tsvector is what engram_archival_fts
// makes of it after each insert and hand edit, and a partial cache
// loaded at each step and a whole cache following the edits through the
// log rank bit for bit as a whole cache loaded then.
func TestArchivalStreamNeighboursPostgres(t *testing.T) {
	ctx := context.Background()
	_, b := openPGStore(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	followed, err := searchindex.NewIndex(ctx, b.DB(), b.SearchDialect(), nil,
		&searchindex.IndexOptions{Write: b.Write, TextCacheBytes: 1 << 30, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer followed.Close()
	if err := followed.WarmTextCache(ctx); err != nil {
		t.Fatal(err)
	}
	words := []string{"", "apple", "banana", "cherry", "damson", "elder", "fig", "grape", "hazel", "iris"}
	for _, e := range streamEntries {
		at := baseTime.Add(e.at).UnixNano()
		exec(`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
			VALUES (?, ?, ?, ?, '[]', '', ?, ?)`, e.id, e.agent, words[e.id]+" note", e.meta, at, at)
	}
	queries := append(words[1:], "note", "apple note", "far")
	check := func(step string) {
		t.Helper()
		var drift int
		if err := b.DB().QueryRowContext(ctx, `SELECT count(*) FROM archival WHERE fts IS DISTINCT FROM
			engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at)`).Scan(&drift); err != nil || drift > 0 {
			t.Fatalf("after %s: %d entries' tsvectors are not what engram_archival_fts makes (%v)", step, drift, err)
		}
		var opts []func() *search.Options
		for _, sup := range []bool{true, false} {
			opts = append(opts, func() *search.Options {
				return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(sup).Limit(100)
			})
		}
		partialRanksLikeWhole(t, b.DB(), b.SearchDialect(), b.Write, step, []string{"a", "b", "c", "d"}, queries,
			map[string]*searchindex.Index{"followed": followed}, opts...)
	}
	const links = `SELECT id, COALESCE(before_id, 0), COALESCE(after_id, 0) FROM archival_links`
	for _, s := range streamSteps {
		step := s.sql
		if step == "" {
			step = "inserts"
		} else {
			exec(s.sql)
		}
		checkStreamLinks(t, step, archivalLinks(t, b.DB(), links), s.links)
		check(step)
	}
	// PostgreSQL logs every entry as changed (its migration 0017): the
	// entry itself is logged, its neighbour is not.
	checkQuietSupersession(t, b.DB(), exec, "id <> 20")
}

// execStaleChecked returns a function that runs one statement in a write
// of b and then fails t if any archival entry's stored tsvector is stale.
func execStaleChecked(t *testing.T, b *pgbackend.Backend) func(q string) {
	return func(q string) {
		t.Helper()
		ctx := context.Background()
		if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
			t.Errorf("after %s: entries %v stale", q, bad)
		}
	}
}

// archivalStalePostgres returns the archival entries whose stored tsvector
// is not what engram_archival_fts makes of them now.
func archivalStalePostgres(t *testing.T, db *sql.DB) []int64 {
	t.Helper()
	rows, err := db.Query(`SELECT id FROM archival WHERE fts IS DISTINCT FROM
		engram_archival_fts(id, agent, content, tags_text, metadata_json, conversation_pos, valid_to IS NULL, created_at) ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var bad []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		bad = append(bad, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return bad
}

// One statement restoring (or superseding) two stream entries next to
// each other: each row's trigger sees the other already changed, and the
// live entries around the pair must still be rewritten.
func TestArchivalStreamRestoreTwoPostgres(t *testing.T) {
	_, b := openPGStore(t)
	exec := execStaleChecked(t, b)
	// Stream entries 1 and 4 live, 2 and 3 superseded between them, each
	// a minute from the next.
	exec(`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES
		(1, 'a', 'papa', '{}', '[]', '', 0, 0, NULL),
		(2, 'a', 'alpha', '{}', '[]', '', 60000000000, 0, 1),
		(3, 'a', 'bravo', '{}', '[]', '', 120000000000, 0, 1),
		(4, 'a', 'november', '{}', '[]', '', 180000000000, 0, NULL)`)
	exec(`UPDATE archival SET valid_to = NULL WHERE id IN (2, 3)`)
	exec(`UPDATE archival SET valid_to = 1 WHERE id IN (2, 3)`)
	exec(`UPDATE archival SET valid_to = NULL WHERE id IN (3, 2)`)
	exec(`DELETE FROM archival`)
	exec(`INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to) VALUES
		(1, 'a', 'papa', '{}', '[]', '', 0, 0, NULL),
		(2, 'a', 'alpha', '{}', '[]', '', 10000000000000, 0, 1),
		(3, 'a', 'bravo', '{}', '[]', '', 20000000000000, 0, 1),
		(4, 'a', 'november', '{}', '[]', '', 60000000000, 0, NULL)`)
	exec(`UPDATE archival SET valid_to = NULL WHERE id IN (2, 3)`)
	exec(`UPDATE archival SET valid_to = 1 WHERE id IN (2, 3)`)
}

// An entry inserted at the end of its stream rewrites the entries whose
// entry after it becomes, when near it: the live entry before it and the
// entry just before it if that one is superseded, whatever lies between
// them. Each case is an agent's stream before the insert (ids in write
// order, times in seconds before the new entry's); after it every
// entry's tsvector is what engram_archival_fts makes of it.
func TestArchivalStreamEndInsertPostgres(t *testing.T) {
	ctx := context.Background()
	_, b := openPGStore(t)
	type prior struct {
		ago        float64 // seconds before the new entry
		superseded bool
	}
	cases := []struct {
		name   string
		stream []prior
	}{
		{"superseded just before, near; none live", []prior{{10, true}}},
		{"live far; superseded just before, near", []prior{{4000, false}, {10, true}}},
		{"live far; superseded far, then superseded just before, near", []prior{{4000, false}, {3000, true}, {10, true}}},
		{"live near", []prior{{10, false}}},
		{"live near; superseded just before, too close", []prior{{10, false}, {0.5, true}}},
		{"live near; superseded between, far", []prior{{10, false}, {0.5, true}, {0.2, true}}},
		{"nothing near", []prior{{4000, false}, {0.5, true}}},
		{"none before", nil},
	}
	at := baseTime.Add(24 * time.Hour)
	id := int64(1000)
	for ci, c := range cases {
		agent := fmt.Sprint("end-", ci)
		err := b.Write(ctx, func(tx *sql.Tx) error {
			for i, p := range c.stream {
				id++
				created := at.Add(-time.Duration(p.ago * float64(time.Second))).UnixNano()
				var validTo any
				if p.superseded {
					validTo = created + 1
				}
				if _, err := tx.ExecContext(ctx, `INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from, valid_to)
					VALUES (?, ?, ?, '{}', '[]', '', ?, ?, ?)`, id, agent, fmt.Sprint("word", ci, "x", i, " note"), created, created, validTo); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if stale := archivalStalePostgres(t, b.DB()); len(stale) > 0 {
			t.Fatalf("%s: before the insert, entries %v are stale", c.name, stale)
		}
		id++
		if err := b.Write(ctx, func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO archival (id, agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
				VALUES (?, ?, 'newest entry', '{}', '[]', '', ?, ?)`, id, agent, at.UnixNano(), at.UnixNano())
			return err
		}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if stale := archivalStalePostgres(t, b.DB()); len(stale) > 0 {
			t.Errorf("%s: after the insert at the stream's end, entries %v are not what engram_archival_fts makes of them", c.name, stale)
		}
	}
}
