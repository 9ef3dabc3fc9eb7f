package searchindex_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
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
