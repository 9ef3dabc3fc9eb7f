package searchindex_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/search"
)

// On PostgreSQL a partition load finds archival entries' neighbours in
// Go as on SQLite; a fresh partial cache ranks as a whole cache (which
// reads them from archival_links), bit for bit, whatever the metadata
// names (the accepted keys, "3", 3 and 3.0, keys passed over, a key
// over 1 KiB kept as its hash, two owners with the same keys), after
// supersessions, restorations, merged entries' places and created_at
// edits (entries naming no conversation are neighbours by time too).
func TestTextCachePartialPostgresNeighboursLikeWhole(t *testing.T) {
	ctx := context.Background()
	_, b := openPGStore(t)
	exec := func(q string, args ...any) {
		t.Helper()
		if err := b.Write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	vocab := strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango
		nectar olive peach quince radish sage thyme`)
	metas := []string{
		`{"conversation": "3"}`, `{"conversation": 3}`, `{"conversation": 3.0}`, `{"conversation": "\u0033"}`,
		`{"conversation_id": "3"}`, `{"session": "3"}`, `{"session_id": 3}`, `{"thread": "3"}`, `{"thread_id": "t"}`,
		`{"conversation": "", "thread": "3"}`, `{"conversation": null, "session": "3"}`,
		`{"conversation": {"id": "3"}, "session": "3"}`, `{"conversation": [3], "thread_id": "t"}`,
		`{"conversation": true}`, `{"session": "a", "session": "3"}`, `{}`, `{"topic": "3"}`,
		`{"thread": "` + strings.Repeat("k", 5000) + `"}`,
		`{"thread_id": "t", "deep": ` + strings.Repeat(`{"a": `, 200) + `"x"` + strings.Repeat(`}`, 200) + `}`,
	}
	n := 0
	for _, agent := range []string{"a", "b"} {
		for round := range 3 {
			for i, m := range metas {
				n++
				content := vocab[n%len(vocab)] + " " + vocab[(n*7+round)%len(vocab)] + " " + vocab[(i*3)%len(vocab)]
				// 10 seconds apart: the entries naming no conversation
				// are a stream.
				at := int64(n) * int64(10*time.Second)
				exec(`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
					VALUES (?, ?, ?, '[]', '', ?, ?)`, agent, content, m, at, at)
			}
		}
	}
	queries := append([]string{}, vocab...)
	queries = append(queries, "apple fig", "mango olive thyme")
	check := func(step string) {
		t.Helper()
		var opts []func() *search.Options
		for _, sup := range []bool{true, false} {
			opts = append(opts, func() *search.Options {
				return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).IncludeSuperseded(sup).Limit(100)
			})
		}
		partialRanksLikeWhole(t, b.DB(), b.SearchDialect(), b.Write, step, []string{"a", "b"}, queries, nil, opts...)
	}
	var linked int
	if err := b.DB().QueryRowContext(ctx, `SELECT count(*) FROM archival_links WHERE before_id IS NOT NULL OR after_id IS NOT NULL`).Scan(&linked); err != nil || linked < 40 {
		t.Fatalf("%d entries with neighbours (%v): the corpus does not exercise them", linked, err)
	}
	check("inserts")
	for _, step := range []string{
		`UPDATE archival SET valid_to = created_at + 1 WHERE id % 3 = 0`,
		`UPDATE archival SET valid_to = NULL WHERE id % 6 = 0`,
		`UPDATE archival SET conversation_pos = id - 19 WHERE id % 5 = 0`,
		`UPDATE archival SET conversation_pos = -4 WHERE id % 11 = 0`,
		`UPDATE archival SET conversation_pos = 9000000000000000000 WHERE id % 13 = 0`,
		`UPDATE archival SET created_at = created_at + 3600000000000 WHERE id % 7 = 0`,
		`UPDATE archival SET created_at = created_at - 3600000000000 + 500000000 WHERE id % 14 = 0`,
	} {
		exec(step)
		check(step)
	}
}
