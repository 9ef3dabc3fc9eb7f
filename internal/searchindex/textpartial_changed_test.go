package searchindex_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// TestTextCachePartialForeignWriteStats: a write to a row no resident
// partition holds keeps a partial cache's store-wide statistics when the
// text log says the row's indexed text is unchanged (search_text_log.
// changed, SQLite migration 0022): a supersession, a message's role.
// Writes that change what the index holds still read them again, and
// every answer stays the SQL path's.
func TestTextCachePartialForeignWriteStats(t *testing.T) {
	testenv.SkipRaceUnlessLong(t, "statistics compared with SQL after each foreign write")
	supersede := func(agent string) []string {
		return []string{
			`UPDATE archival SET valid_to = created_at WHERE id = (SELECT min(id) FROM archival WHERE agent = '` + agent + `')`,
			`INSERT INTO archival (agent, content, metadata_json, tags_json, tags_text, created_at, valid_from)
				VALUES ('` + agent + `', 'wing flow superseding', '{}', '[]', '', 0, 0)`,
			`UPDATE archival SET superseded_by = (SELECT max(id) FROM archival) WHERE id = (SELECT min(id) FROM archival WHERE agent = '` + agent + `')`,
		}
	}
	one := func(agent, where string) string {
		return `(SELECT min(id) FROM ` + where + ` WHERE agent = '` + agent + `')`
	}
	for _, tc := range []struct {
		name   string
		writes []string
		reread bool // the statistics must be read again
		// away: the write moves a row to an owner whose partition is not
		// held, so holding agent-5's does not make it followed.
		away bool
	}{
		{"supersession", supersede("agent-5"), false, false},
		{"superseded only", []string{`UPDATE archival SET valid_to = created_at, valid_from = valid_from + 1 WHERE id = ` + one("agent-5", "archival")}, false, false},
		{"message role and name", []string{`UPDATE messages SET role = 'assistant', name = 'n', tool_call_id = 'x' WHERE id = ` + one("agent-5", "messages")}, false, false},
		{"archival content", []string{`UPDATE archival SET content = 'wing wing wing' WHERE id = ` + one("agent-5", "archival")}, true, false},
		{"archival tags", []string{`UPDATE archival SET tags_json = '["wing"]', tags_text = 'wing' WHERE id = ` + one("agent-5", "archival")}, true, false},
		{"archival metadata", []string{`UPDATE archival SET metadata_json = '{"k": "flutter"}' WHERE id = ` + one("agent-5", "archival")}, true, false},
		{"archival owner", []string{`UPDATE archival SET agent = 'agent-6' WHERE id = ` + one("agent-5", "archival")}, true, true},
		{"archival delete", []string{`DELETE FROM archival WHERE id = ` + one("agent-5", "archival")}, true, false},
		{"message content", []string{`UPDATE messages SET content = 'wing wing' WHERE id = ` + one("agent-5", "messages")}, true, false},
		{"message moved in its batch", []string{`UPDATE messages SET seq = seq + 1000 WHERE id = ` + one("agent-5", "messages")}, true, false},
		{"message delete", []string{`DELETE FROM messages WHERE id = ` + one("agent-5", "messages")}, true, false},
		// A message alone in its batch is an insert, followed; appended
		// after another (or put before it) it fills that one's context
		// column from empty, followed too; two appends in one catch-up
		// are followed one after the other.
		{"message in a new batch", []string{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			VALUES ('agent-5', 'user', 'wing flutter', 'new', 1, 0)`}, false, false},
		{"message appended", []string{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			VALUES ('agent-5', 'user', 'wing flutter', 'b1', (SELECT max(seq) + 1 FROM messages WHERE agent = 'agent-5'), 0)`}, false, false},
		{"two messages appended", []string{
			`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES ('agent-5', 'user', 'wing wing mach', 'b1', (SELECT max(seq) + 1 FROM messages WHERE agent = 'agent-5'), 0)`,
			`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
				VALUES ('agent-5', 'user', 'flutter layer', 'b1', (SELECT max(seq) + 1 FROM messages WHERE agent = 'agent-5'), 0)`,
		}, false, false},
		// Two seqs past the last one: it fills the last one's
		// context_after from empty, and the one before's from one
		// message to two.
		{"message appended past a gap", []string{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			VALUES ('agent-5', 'user', 'wing flutter', 'b1', (SELECT max(seq) + 2 FROM messages WHERE agent = 'agent-5'), 0)`}, false, false},
		{"three messages appended in one statement", []string{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			SELECT 'agent-5', 'user', w, 'b1', (SELECT max(seq) FROM messages WHERE agent = 'agent-5') + n, 0
			FROM (SELECT 1 AS n, 'wing mach' AS w UNION ALL SELECT 2, 'flutter flutter' UNION ALL SELECT 3, 'layer wing')`}, false, false},
		{"message put first", []string{`INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
			VALUES ('agent-5', 'user', 'wing flutter', 'b1', (SELECT min(seq) - 1 FROM messages WHERE agent = 'agent-5'), 0)`}, false, false},
		// A message moved next to a new one changed its own place (its
		// log entry says so): not taken for an arrival beside it.
		{"message moved beside a new one", []string{
			`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ('agent-5', 'user', 'wing mach', 'x', 2, 0)`,
			`UPDATE messages SET batch_id = 'x', seq = 1, content = 'wing wing flutter' WHERE agent = 'agent-5' AND batch_id = 'lone'`,
		}, true, false},
		// Its successor's content changing rewrites it too: not followed.
		{"neighbour edited", []string{`UPDATE messages SET content = 'wing shock' WHERE agent = 'agent-5' AND seq = 2`}, true, false},
	} {
		// held: agent-5's partitions are loaded ahead of the writes
		// (Index.HoldOwner, as the store does before its own deletes and
		// supersessions), so every write is followed.
		for _, held := range []bool{false, true} {
			name := tc.name
			if held {
				name += "/held"
			}
			t.Run(name, func(t *testing.T) { testForeignWriteStats(t, tc.writes, tc.reread && (!held || tc.away), held) })
		}
	}
}

func testForeignWriteStats(t *testing.T, writes []string, reread, held bool) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	words := []string{"wing", "flutter", "mach", "layer", "shock", "flow"}
	// 12 rows of each kind an agent with the long tests, 6
	// otherwise (writing them is most of each case's time).
	inTx(t, db, func(tx execer) {
		for a := range 8 {
			for i := range testenv.Scale(6, 12) {
				agent := fmt.Sprint("agent-", a)
				insertArchival(t, tx, archivalRow{Agent: agent, Content: words[(a+i)%6] + " " + words[i%4] + " note"})
				insertMessage(t, tx, agent, "user", words[(a*i)%6]+" "+words[i%5], baseTime)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at)
						VALUES (?, 'user', 'shock layer', 'lone', 1, 0)`, fmt.Sprint("agent-", a)); err != nil {
				t.Fatal(err)
			}
		}
	})
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 20, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(ctx)
	scope := search.Scope{Agent: "agent-0"}
	search0 := func() {
		t.Helper()
		for _, ct := range []search.ContentType{search.Archival, search.Messages} {
			opts := func() *search.Options { return search.NewOptions().Mode(search.FTS).ContentTypes(ct).Limit(20) }
			want, err := sqlx.Search(ctx, "wing flutter", scope, opts())
			if err != nil {
				t.Fatal(err)
			}
			got, err := x.Search(ctx, "wing flutter", scope, opts())
			if err != nil {
				t.Fatal(err)
			}
			if len(want) != len(got) {
				t.Fatalf("%v: SQL %d results, cache %d", ct, len(want), len(got))
			}
			if err := sameRanking(want, got); err != nil {
				t.Fatalf("%v: %v\nSQL   %v\ncache %v", ct, err, keys(want), keys(got))
			}
		}
	}
	search0()
	answers, reads := searchindex.TextCacheAnswers(x), searchindex.TextStatsReads(x)
	if answers == 0 || reads == 0 {
		t.Fatalf("the cache answered %d legs and read the statistics %d times: it is not what is measured", answers, reads)
	}
	if held {
		for _, ct := range []search.ContentType{search.Archival, search.Messages} {
			x.HoldOwner(ctx, ct, "agent-5")
		}
	}
	for _, q := range writes {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	search0()
	if searchindex.TextCacheAnswers(x)-answers != 2 {
		t.Fatalf("the cache answered %d of 2 legs after the write", searchindex.TextCacheAnswers(x)-answers)
	}
	for _, ct := range []search.ContentType{search.Archival, search.Messages} {
		if searchindex.TextCacheHeld(x, ct, "agent-5") != held {
			t.Fatalf("agent-5's %v resident: %v, want %v", ct, !held, held)
		}
	}
	if got := searchindex.TextStatsReads(x) - reads; (got > 0) != reread {
		t.Fatalf("after the write the statistics were read %d times; want them read again: %v", got, reread)
	}
}

// TestTextCachePartialIDChange: a row whose id changes (raw SQL) leaves
// the log's entry for the old id too, so a resident partition does not
// keep the old id beside the new one.
func TestTextCachePartialIDChange(t *testing.T) {
	for _, tc := range []struct {
		name, table string
		ct          search.ContentType
	}{
		{"archival", "archival", search.Archival},
		{"messages", "messages", search.Messages},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
			for i := range 6 {
				insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprint("wing note ", i)})
				insertMessage(t, db, "a", "user", fmt.Sprint("wing said ", i), baseTime)
			}
			x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 20, VectorCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			searchindex.ForceTextPartial(x)
			_ = x.WarmTextCache(ctx)
			opts := func() *search.Options { return search.NewOptions().Mode(search.FTS).ContentTypes(tc.ct).Limit(20) }
			if _, err := x.Search(ctx, "wing", search.Scope{Agent: "a"}, opts()); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, `UPDATE `+tc.table+` SET id = 1000 WHERE id = (SELECT min(id) FROM `+tc.table+`)`); err != nil {
				t.Fatal(err)
			}
			rs, err := x.Search(ctx, "wing", search.Scope{Agent: "a"}, opts())
			if err != nil {
				t.Fatal(err)
			}
			if searchindex.TextCacheAnswers(x) != 2 {
				t.Fatalf("the cache answered %d of 2 searches", searchindex.TextCacheAnswers(x))
			}
			if len(rs) != 6 {
				t.Fatalf("%d results, want 6: %v", len(rs), keys(rs))
			}
			if _, held := searchindex.TextCacheHolds(x, tc.ct, "a", 1); held {
				t.Fatal("the partition still holds the row under its old id")
			}
		})
	}
}
