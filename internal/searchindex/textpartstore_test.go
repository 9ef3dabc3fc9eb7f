package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// partialIndex opens a partial text cache over db (every owner's
// partition loaded by its first search).
func partialIndex(t *testing.T, db *sql.DB) *searchindex.Index {
	t.Helper()
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	searchindex.ForceTextPartial(x)
	t.Cleanup(func() { x.Close() })
	if err := x.WarmTextCache(context.Background()); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache: %v, want searchindex.ErrCacheBudget (partial)", err)
	}
	if partial, _, _ := searchindex.TextCachePartial(x); !partial {
		t.Fatal("the cache is not partial")
	}
	return x
}

// TestStoredPartitionsRankLikeRows: partitions one process loaded and
// saved are another process's first loads, caught up with the writes
// made since (inserts into conversations, whose neighbours' context
// changes too, other agents' rows, deletes and updates that drop a stored
// part, blocks rewritten, deleted and moved to another owner, a corrupt
// part), and every search ranks as SQL does.
func TestStoredPartitionsRankLikeRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	const agents = 8
	r := rand.New(rand.NewPCG(7, 9))
	var queries []string
	inTx(t, db, func(tx execer) {
		queries = agentsCorpus(t, tx, agents, 30)
		for a := range agents { // conversations: each entry's neighbours are its context
			for i := range 12 {
				insertArchival(t, tx, archivalRow{Agent: fmt.Sprintf("agent-%d", a), Content: fmt.Sprintf("%s turn %d of talk", queries[i%len(queries)], i),
					Metadata: fmt.Sprintf(`{"conversation": "c%d"}`, i%3)})
			}
		}
	})
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	shapes := []*search.Options{
		search.NewOptions().ContentTypes(search.Archival).Limit(15),
		search.NewOptions().ContentTypes(search.Messages).Limit(15),
		search.NewOptions().Limit(20),
	}
	compare := func(t *testing.T, x *searchindex.Index, agent string) {
		t.Helper()
		for _, q := range append(queries[:3:3], "talk turn") {
			for _, o := range shapes {
				got, err := x.Search(ctx, q, search.Scope{Agent: agent}, o.Mode(search.FTS))
				if err != nil {
					t.Fatal(err)
				}
				sameAsSQLWith(t, ctx, sqlx, q, agent, o.Mode(search.FTS), got)
			}
		}
	}
	first := partialIndex(t, db)
	for a := range agents {
		compare(t, first, fmt.Sprintf("agent-%d", a))
	}
	searchindex.WaitTextPartSaves(first)
	if n := searchindex.TextPartsSaved(first); n != 3*agents {
		t.Fatalf("%d partitions saved, want %d (blocks, archival and messages of each agent)", n, 3*agents)
	}
	first.Close()
	parts := func() map[string]bool {
		rows, err := db.QueryContext(ctx, `SELECT kind, owner FROM search_text_parts`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]bool{}
		for rows.Next() {
			var k int
			var o string
			if err := rows.Scan(&k, &o); err != nil {
				t.Fatal(err)
			}
			out[fmt.Sprint(k, o)] = true
		}
		return out
	}
	if n := len(parts()); n != 3*agents {
		t.Fatalf("%d stored parts, want %d", n, 3*agents)
	}

	// Writes since: agent-0 talks on (its conversation's entries change
	// context), agent-1 gets messages, others write rows of their own;
	// agent-2 deletes an entry and agent-3 rewrites one (their stored
	// archival parts go with them); agent-5 rewrites a block (its blocks
	// part goes when the block is indexed again, before the next search
	// over blocks), agent-6 deletes one (its part goes with it) and one of
	// agent-7's moves to agent-0 (both owners' parts go); agent-4's
	// stored archival part is corrupt.
	other := openDBAt(t, path)
	for i := range 5 {
		insertArchival(t, other, archivalRow{Agent: "agent-0", Content: fmt.Sprintf("%s later turn %d", queries[i], i), Metadata: `{"conversation": "c1"}`})
		insertMessage(t, other, "agent-1", "user", queries[i]+" a later message", baseTime)
		insertArchival(t, other, archivalRow{Agent: fmt.Sprintf("agent-%d", 5+r.IntN(3)), Content: queries[i] + " elsewhere"})
	}
	if _, err := other.ExecContext(ctx, `DELETE FROM archival WHERE id = (SELECT min(id) FROM archival WHERE agent = 'agent-2')`); err != nil {
		t.Fatal(err)
	}
	if _, err := other.ExecContext(ctx, `UPDATE archival SET content = content || ' rewritten' WHERE id = (SELECT max(id) FROM archival WHERE agent = 'agent-3')`); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`UPDATE blocks SET rendered = rendered || ' rewritten' WHERE owner = 'agent-5' AND label = 'block-1'`,
		`DELETE FROM blocks WHERE owner = 'agent-6' AND label = 'block-2'`,
		`UPDATE blocks SET owner = 'agent-0', label = 'moved' WHERE owner = 'agent-7' AND label = 'block-1'`,
	} {
		if _, err := other.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := other.ExecContext(ctx, `UPDATE search_text_parts SET data = substr(data, 1, 40) || x'00' || substr(data, 42) WHERE kind = 2 AND owner = 'agent-4'`); err != nil {
		t.Fatal(err)
	}
	got := parts()
	for _, gone := range []string{"2agent-2", "2agent-3", "1agent-6", "1agent-7", "1agent-0"} {
		if got[gone] {
			t.Fatalf("stored part %s outlived a change to its rows", gone)
		}
	}
	if !got["1agent-5"] {
		t.Fatal("agent-5's blocks part went before its block was indexed again")
	}

	second := partialIndex(t, db)
	for a := range agents {
		compare(t, second, fmt.Sprintf("agent-%d", a))
	}
	// agent-2's and agent-3's archival parts were dropped, agent-4's is
	// corrupt, and the blocks parts of agent-5 (its block indexed again
	// by the first search over blocks), agent-6, agent-7 and agent-0 were
	// dropped: the other 17 loaded from search_text_parts.
	if n := searchindex.TextPartsStored(second); n != 3*agents-7 {
		t.Fatalf("%d partitions loaded from stored parts, want %d", n, 3*agents-7)
	}
	searchindex.WaitTextPartSaves(second)
	if n := searchindex.TextPartsSaved(second); n != 7 {
		t.Fatalf("%d partitions saved again, want the 7 read from rows", n)
	}
	second.Close()

	// A third process finds them all, and ranks alike again.
	third := partialIndex(t, db)
	analyzed := searchindex.TextRowsAnalyzed(third) // the build's sample
	for a := range agents {
		compare(t, third, fmt.Sprintf("agent-%d", a))
	}
	if n := searchindex.TextPartsStored(third); n != 3*agents {
		t.Fatalf("%d partitions loaded from stored parts, want %d", n, 3*agents)
	}
	// Only the rows agent-0's and agent-1's writes changed (the new ones
	// and their neighbours), replayed onto parts saved before them; read
	// whole, the loads would analyze 600.
	if n := searchindex.TextRowsAnalyzed(third) - analyzed; n > 5*3*2 {
		t.Fatalf("%d rows analyzed by the loads: want the rows replayed only (at most %d), every partition stored", n, 5*3*2)
	}
}

// TestStoredPartitionForgetsDeletedText: a deleted entry's words leave
// search_text_parts with it, and a save of a partition older than a
// change to its owner's rows is not written (it would write the deleted
// words back).
func TestStoredPartitionForgetsDeletedText(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	for i := range 20 {
		insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("ordinary entry %d", i)})
	}
	secret := insertArchival(t, db, archivalRow{Agent: "a", Content: "the vault code is zanzibarquux"})
	holding := func() int {
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM search_text_parts WHERE instr(data, 'zanzibarquux') > 0`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	x := partialIndex(t, db)
	find := func() {
		if _, err := x.Search(ctx, "ordinary", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)); err != nil {
			t.Fatal(err)
		}
	}
	// A save held until the delete commits: it must not write the part.
	release := make(chan struct{})
	searchindex.SetTextPartSaveHook(x, func() { <-release })
	find()
	if _, err := openDBAt(t, path).ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, secret); err != nil {
		t.Fatal(err)
	}
	close(release)
	searchindex.WaitTextPartSaves(x)
	if n := holding(); n != 0 {
		t.Fatalf("%d stored parts hold a deleted entry's words", n)
	}
	if searchindex.TextPartsSkipped(x) != 1 {
		t.Fatalf("the stale save was not skipped (saved %d, skipped %d)", searchindex.TextPartsSaved(x), searchindex.TextPartsSkipped(x))
	}

	// Saved, then deleted: the trigger takes the part.
	secret = insertArchival(t, db, archivalRow{Agent: "a", Content: "the vault code is zanzibarquux"})
	y := partialIndex(t, db)
	if _, err := y.Search(ctx, "ordinary", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)); err != nil {
		t.Fatal(err)
	}
	searchindex.WaitTextPartSaves(y)
	if n := holding(); n != 1 {
		t.Fatalf("%d stored parts hold the entry's words, want 1", n)
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM archival WHERE id = ?`, secret); err != nil {
		t.Fatal(err)
	}
	if n := holding(); n != 0 {
		t.Fatalf("%d stored parts hold a deleted entry's words", n)
	}
}

// TestStoredPartitionMovedRowForgotten: an entry that moved to another
// owner while its old owner's part waited to be saved is a change to
// that part: it is not written (else the entry's words, rewritten or
// deleted later under its new owner, whose triggers drop that owner's
// part only, would stay stored in the old owner's).
func TestStoredPartitionMovedRowForgotten(t *testing.T) {
	for _, then := range []string{"rewrite", "delete"} {
		t.Run(then, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "engram.db")
			db := openDBAt(t, path)
			for i := range 10 {
				insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("ordinary entry %d", i), Metadata: fmt.Sprintf(`{"conversation": "c%d"}`, i)})
			}
			secret := insertArchival(t, db, archivalRow{Agent: "a", Content: "the vault code is zanzibarquux", Metadata: `{"conversation": "solo"}`})
			x := partialIndex(t, db)
			other := openDBAt(t, path)
			release := make(chan struct{})
			searchindex.SetTextPartSaveHook(x, func() { <-release })
			if _, err := x.Search(ctx, "ordinary", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)); err != nil {
				t.Fatal(err)
			}
			if _, err := other.ExecContext(ctx, `UPDATE archival SET agent = 'b' WHERE id = ?`, secret); err != nil {
				t.Fatal(err)
			}
			close(release)
			searchindex.WaitTextPartSaves(x)
			q := `UPDATE archival SET content = 'nothing to see' WHERE id = ?`
			if then == "delete" {
				q = `DELETE FROM archival WHERE id = ?`
			}
			if _, err := other.ExecContext(ctx, q, secret); err != nil {
				t.Fatal(err)
			}
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM search_text_parts WHERE instr(data, 'zanzibarquux') > 0`).Scan(&n); err != nil || n != 0 {
				t.Fatalf("after the entry's %s, %d stored part(s) hold its old words (%v)", then, n, err)
			}
			if searchindex.TextPartsSkipped(x) != 1 {
				t.Fatalf("the save was not skipped (saved %d, skipped %d)", searchindex.TextPartsSaved(x), searchindex.TextPartsSkipped(x))
			}
		})
	}
}

// TestStoredPartitionNotForOwnersWithoutRows: searches scoped to names
// that own no rows write nothing (each would be a write transaction and
// a row no change to a row ever drops).
func TestStoredPartitionNotForOwnersWithoutRows(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	for i := range 10 {
		insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("ordinary entry %d", i)})
	}
	x := partialIndex(t, db)
	for i := range 50 {
		if _, err := x.Search(ctx, "ordinary", search.Scope{Agent: fmt.Sprint("ghost-", i)}, search.NewOptions().Mode(search.FTS)); err != nil {
			t.Fatal(err)
		}
	}
	searchindex.WaitTextPartSaves(x)
	var n int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM search_text_parts`).Scan(&n); err != nil || n != 0 || searchindex.TextPartsSaved(x) != 0 {
		t.Fatalf("50 searches of agents without rows: %d stored parts, %d saves (%v)", n, searchindex.TextPartsSaved(x), err)
	}
}

// TestStoredPartitionOfAnotherSchema: a part saved under one schema
// version is not used under another (a migration may change what a row
// is indexed with): the rows are read, and the part saved again.
func TestStoredPartitionOfAnotherSchema(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	for i := range 20 {
		insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("ordinary entry %d", i)})
	}
	find := func(x *searchindex.Index) {
		if _, err := x.Search(ctx, "ordinary", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival)); err != nil {
			t.Fatal(err)
		}
		searchindex.WaitTextPartSaves(x)
	}
	first := partialIndex(t, db)
	find(first)
	first.Close()
	var v int
	if err := db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v+1)); err != nil {
		t.Fatal(err)
	}
	defer db.ExecContext(ctx, fmt.Sprintf(`PRAGMA user_version = %d`, v))
	later := partialIndex(t, db)
	find(later)
	if searchindex.TextPartsStored(later) != 0 || searchindex.TextPartsSaved(later) != 1 {
		t.Fatalf("under another schema version: %d parts used, %d saved; want 0 and 1", searchindex.TextPartsStored(later), searchindex.TextPartsSaved(later))
	}
	again := partialIndex(t, db)
	find(again)
	if searchindex.TextPartsStored(again) != 1 {
		t.Fatal("the part saved under the new version was not used")
	}
}

// TestStoredPartitionCaughtUpAtOnce: a stored part whose owner's rows no
// entry logged since names is caught up in one statement (other owners'
// rows written, moved away and deleted since); one whose owner has a new
// row is read again in the log's snapshot. Either way the process ranks
// as SQL does.
func TestStoredPartitionCaughtUpAtOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "engram.db")
	db := openDBAt(t, path)
	var moving int64
	for _, a := range []string{"a", "b"} {
		for i := range 12 {
			id := insertArchival(t, db, archivalRow{Agent: a, Content: fmt.Sprintf("harbour entry %d of %s", i, a), Metadata: fmt.Sprintf(`{"conversation": "c%d"}`, i%3)})
			if a == "a" && i == 5 {
				moving = id
			}
			insertMessage(t, db, a, "user", fmt.Sprintf("harbour message %d of %s", i, a), baseTime)
		}
	}
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival, search.Messages).Limit(30)
	compare := func(x *searchindex.Index, agent string) {
		t.Helper()
		for _, q := range []string{"harbour", "entry 3", "message"} {
			got, err := x.Search(ctx, q, search.Scope{Agent: agent}, opts)
			if err != nil {
				t.Fatal(err)
			}
			sameAsSQLWith(t, ctx, sqlx, q, agent, opts, got)
		}
	}
	first := partialIndex(t, db)
	compare(first, "a")
	compare(first, "b")
	searchindex.WaitTextPartSaves(first)
	first.Close()

	// Since: b's rows change (its part goes), one of a's entries moves
	// to b (a's part goes too: saved again below).
	other := openDBAt(t, path)
	if _, err := other.ExecContext(ctx, `UPDATE archival SET agent = 'b' WHERE id = ?`, moving); err != nil {
		t.Fatal(err)
	}
	second := partialIndex(t, db)
	compare(second, "a")
	searchindex.WaitTextPartSaves(second)
	second.Close()
	insertArchival(t, other, archivalRow{Agent: "b", Content: "harbour entry new of b"})
	insertMessage(t, other, "b", "user", "harbour message new of b", baseTime)
	if _, err := other.ExecContext(ctx, `DELETE FROM archival WHERE id = (SELECT max(id) FROM archival WHERE agent = 'b')`); err != nil {
		t.Fatal(err)
	}

	third := partialIndex(t, db)
	compare(third, "a")
	if got, at := searchindex.TextPartsStored(third), searchindex.TextPartsAtOnce(third); got != 2 || at != 2 {
		t.Fatalf("a's parts: %d loaded from stored parts, %d caught up in one statement; want 2 and 2", got, at)
	}
	third.Close()

	// A new entry of a's own since its part: read again in a snapshot.
	insertArchival(t, other, archivalRow{Agent: "a", Content: "harbour entry new of a", Metadata: `{"conversation": "c1"}`})
	fourth := partialIndex(t, db)
	compare(fourth, "a")
	if got, at := searchindex.TextPartsStored(fourth), searchindex.TextPartsAtOnce(fourth); got != 2 || at != 1 {
		t.Fatalf("a's parts: %d loaded from stored parts, %d caught up in one statement; want 2 and 1 (messages)", got, at)
	}
	compare(fourth, "b")
}

// saveAgentsParts is a first process over db: it searches agent a's rows
// for "harbour" with opts, saves the partitions it loaded and closes.
func saveAgentsParts(t *testing.T, db *sql.DB, opts *search.Options) {
	t.Helper()
	first := partialIndex(t, db)
	defer first.Close()
	if _, err := first.Search(context.Background(), "harbour", search.Scope{Agent: "a"}, opts); err != nil {
		t.Fatal(err)
	}
	searchindex.WaitTextPartSaves(first)
}

// boundIndex is a partial Index over db whose text cache's bound is
// limit bytes (no vector cache), warmed, closed at the test's end.
func boundIndex(t *testing.T, db *sql.DB, limit int64) *searchindex.Index {
	t.Helper()
	x, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: limit, VectorCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	searchindex.ForceTextPartial(x)
	_ = x.WarmTextCache(context.Background())
	return x
}

// bigArchivalPart gives agent a 4,000 archival entries and saves their
// part, too big to decode from the driver's buffer (over 256 KiB); it
// returns the part's size.
func bigArchivalPart(t *testing.T, db *sql.DB, opts *search.Options) int64 {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 4000 {
		insertArchival(t, tx, archivalRow{Agent: "a", Content: fmt.Sprintf("harbour entry %d crane cargo word%d tug%d the quick brown fox by the harbour wall again %d", i, i%131, i%17, i*7)})
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	saveAgentsParts(t, db, opts)
	var size int64
	if err := db.QueryRowContext(ctx, `SELECT length(data) FROM search_text_parts WHERE kind = 2 AND owner = 'a'`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if size <= 256<<10 {
		t.Fatalf("part of %d B, want one over 256 KiB", size)
	}
	return size
}

// TestStoredPartitionLogPastItsCap: a stored part is caught up past many
// log entries of a few rows (another owner's row edited many times),
// those past what the load's statement reads in a snapshot of their own,
// and read from the rows again past more rows logged since than its cap
// (64 + 2 a row). Whichever, a new row of the part's owner written after
// them is found, and the rows it had are.
func TestStoredPartitionLogPastItsCap(t *testing.T) {
	for _, tc := range []struct {
		name          string
		edits, others int  // edits of one row of b's, new rows of b's
		quiet         bool // no new row of a's after them
		stored        int64
	}{
		{"80 edits of a row", 80, 0, false, 1},
		{"300 edits of a row, past the statement's entries", 300, 0, false, 1},
		{"70 new rows, past the cap", 0, 70, true, 0},
		{"70 new rows, past the cap, then a's", 0, 70, false, 0},
		{"300 new rows, past the cap and the statement's entries", 0, 300, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
			insertArchival(t, db, archivalRow{Agent: "a", Content: "harbour entry one"})
			insertArchival(t, db, archivalRow{Agent: "a", Content: "harbour entry two"})
			other := insertArchival(t, db, archivalRow{Agent: "b", Content: "harbour entry of b"})
			opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(30)
			saveAgentsParts(t, db, opts)
			for i := range tc.edits {
				if _, err := db.ExecContext(ctx, `UPDATE archival SET content = ? WHERE id = ?`, fmt.Sprintf("harbour entry of b, edit %d", i), other); err != nil {
					t.Fatal(err)
				}
			}
			for i := range tc.others {
				insertArchival(t, db, archivalRow{Agent: "b", Content: fmt.Sprintf("harbour entry %d of b", i)})
			}
			q, want := "harbour", 2
			if !tc.quiet {
				insertArchival(t, db, archivalRow{Agent: "a", Content: "harbour entry lighthouse"})
				q, want = "lighthouse", 1
			}
			second := partialIndex(t, db)
			defer second.Close()
			got, err := second.Search(ctx, q, search.Scope{Agent: "a"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != want {
				t.Fatalf("%q over a's entries: %d results, want %d", q, len(got), want)
			}
			if n := searchindex.TextPartsStored(second); n != tc.stored {
				t.Fatalf("%d partitions loaded from stored parts, want %d", n, tc.stored)
			}
		})
	}
}

// TestStoredPartitionPositionColumns: the log a load replays is read
// from a stored part's pos and replay_max columns, beside the position its
// bytes hold. Columns that do not agree with the part (a position past
// its own, or none) leave the part unused and the rows read; a cap below
// the entries since has them read in a snapshot of their own. Either
// way a row of the owner's written since is found.
func TestStoredPartitionPositionColumns(t *testing.T) {
	for _, tc := range []struct {
		name, set string
		stored    int64
	}{
		{"pos past the part's", `pos = pos + 1000000`, 0},
		// (The statement reads one entry: the rest are read in a
		// snapshot of their own.)
		{"replay_max below the entries since", `replay_max = 0`, 1},
		{"no pos", `pos = NULL`, 0},
		{"no replay_max", `replay_max = NULL`, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
			insertArchival(t, db, archivalRow{Agent: "a", Content: "harbour entry one"})
			other := insertArchival(t, db, archivalRow{Agent: "b", Content: "harbour entry of b"})
			opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(30)
			saveAgentsParts(t, db, opts)
			// Since the part: an entry of b's row, then a new row of a's.
			if _, err := db.ExecContext(ctx, `UPDATE archival SET content = 'harbour entry of b, edited' WHERE id = ?`, other); err != nil {
				t.Fatal(err)
			}
			insertArchival(t, db, archivalRow{Agent: "a", Content: "harbour entry lighthouse"})
			if _, err := db.ExecContext(ctx, `UPDATE search_text_parts SET `+tc.set+` WHERE kind = 2 AND owner = 'a'`); err != nil {
				t.Fatal(err)
			}
			second := partialIndex(t, db)
			defer second.Close()
			// (A search of b's first brings the cache's position past
			// those writes: a's load then has nothing logged since it
			// began to read again.)
			if _, err := second.Search(ctx, "harbour", search.Scope{Agent: "b"}, opts); err != nil {
				t.Fatal(err)
			}
			got, err := second.Search(ctx, "lighthouse", search.Scope{Agent: "a"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 {
				t.Fatalf("a's entry written since its part: %d results, want 1", len(got))
			}
			if n := searchindex.TextPartsStored(second); n != tc.stored {
				t.Fatalf("%d partitions loaded from the stored part, want %d", n, tc.stored)
			}
		})
	}
}

// TestStoredLoadsWaitingHoldNoCopy: first searches whose stored parts
// load while the bound is taken (a load of a big owner's rows in flight)
// hold no copy of their part while they wait for the reservation, nor
// the driver's buffer: they read it once reserved.
func TestStoredLoadsWaitingHoldNoCopy(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	const agents = 8
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for a := range agents {
		for i := range 800 {
			insertArchival(t, tx, archivalRow{Agent: fmt.Sprint("w-", a), Content: fmt.Sprintf("harbour entry %d crane cargo %d lifts word%d other%d", i, i*7, i%97, i%13)})
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(10)
	first := boundIndex(t, db, 1<<30)
	for a := range agents {
		if _, err := first.Search(ctx, "harbour", search.Scope{Agent: fmt.Sprint("w-", a)}, opts); err != nil {
			t.Fatal(err)
		}
	}
	searchindex.WaitTextPartSaves(first)
	first.Close()
	var size int64
	if err := db.QueryRowContext(ctx, `SELECT min(length(data)) FROM search_text_parts WHERE kind = 2`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	limit := 3 * size
	x := boundIndex(t, db, limit)
	defer x.Close()
	if _, err := x.Search(ctx, "harbour", search.Scope{Agent: "nobody"}, opts); err != nil { // (the statistics)
		t.Fatal(err)
	}
	release := searchindex.HoldTextReservation(x, limit)
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	var wg sync.WaitGroup
	for a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := x.Search(ctx, "harbour", search.Scope{Agent: fmt.Sprint("w-", a)}, opts); err != nil {
				t.Error(err)
			}
		}()
	}
	time.Sleep(time.Second) // every load at its wait for the bound
	runtime.GC()
	runtime.ReadMemStats(&m1)
	release()
	wg.Wait()
	held := float64(int64(m1.HeapAlloc)-int64(m0.HeapAlloc)) / float64(agents*size)
	t.Logf("each load waiting for the bound holds %.2f times its part's size", held)
	if held > 0.5 {
		t.Fatalf("each load waiting for the bound holds %.2f copies of its part, want none", held)
	}
	if n := searchindex.TextPartsStored(x); n != agents {
		t.Fatalf("%d partitions loaded from their stored parts, want %d", n, agents)
	}
	if n := searchindex.TextPartRereads(x); n < agents {
		t.Fatalf("%d parts read again, want at least %d (each load waited)", n, agents)
	}
	if n := searchindex.TextInflight(x); n != 0 {
		t.Fatalf("%d B of the bound still reserved", n)
	}
}

// TestStoredBigPartReadOnce: a part too big to decode from the driver's
// buffer (over 256 KiB) is copied and decoded once the statement is done;
// with the bound free it is read once, by the load's statement.
func TestStoredBigPartReadOnce(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(5)
	size := bigArchivalPart(t, db, opts)
	x := boundIndex(t, db, 1<<30)
	got, err := x.Search(ctx, "harbour", search.Scope{Agent: "a"}, opts)
	if err != nil || len(got) != 5 {
		t.Fatalf("search: %d results (%v), want 5", len(got), err)
	}
	if n := searchindex.TextPartsStored(x); n != 1 {
		t.Fatalf("%d partitions loaded from their stored parts, want 1", n)
	}
	if n := searchindex.TextPartRereads(x); n != 0 {
		t.Fatalf("the part of %d B was read %d more times, the bound free", size, n)
	}
}

// TestStoredLoadWaitingAcrossClose: a stored load waiting for the bound
// when its Index closes finishes once the bound frees, and leaves none of
// it reserved.
func TestStoredLoadWaitingAcrossClose(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	for i := range 300 {
		insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("harbour entry %d crane cargo word%d", i, i%31)})
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(5)
	saveAgentsParts(t, db, opts)
	const limit = 1 << 20
	x := boundIndex(t, db, limit)
	if _, err := x.Search(ctx, "harbour", search.Scope{Agent: "nobody"}, opts); err != nil {
		t.Fatal(err)
	}
	release := searchindex.HoldTextReservation(x, limit)
	done := searchLater(ctx, x, "harbour", "a", opts)
	time.Sleep(200 * time.Millisecond) // the load at its wait for the bound
	closed := make(chan struct{})
	go func() { x.Close(); close(closed) }()
	time.Sleep(100 * time.Millisecond)
	release()
	select {
	case a := <-done:
		if a.err != nil {
			t.Errorf("the search waiting across Close: %v", a.err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the search never returned")
	}
	<-closed
	if n := searchindex.TextInflight(x); n != 0 {
		t.Fatalf("%d B of the bound still reserved", n)
	}
}

// TestStoredPartSavedAnewWhileALoadWaits: a load that waited for the
// bound reads its part again; saved anew meanwhile (after a write of
// the owner's), the part the load's statement saw is gone, and the load
// gives up (its statement's snapshot is the only one it may install at):
// the search answers in SQL, the row written meanwhile too, and the next
// search loads the new part.
func TestStoredPartSavedAnewWhileALoadWaits(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	for i := range 300 {
		insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("harbour entry %d crane cargo word%d", i, i%31)})
	}
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(400)
	saveAgentsParts(t, db, opts)
	var size int64
	if err := db.QueryRowContext(ctx, `SELECT length(data) FROM search_text_parts WHERE kind = 2 AND owner = 'a'`).Scan(&size); err != nil {
		t.Fatal(err)
	}
	x := boundIndex(t, db, 8*size)
	if _, err := x.Search(ctx, "harbour", search.Scope{Agent: "nobody"}, opts); err != nil { // (the statistics)
		t.Fatal(err)
	}
	analyzed := searchindex.TextRowsAnalyzed(x)
	release := searchindex.HoldTextReservation(x, 8*size)
	done := searchLater(ctx, x, "harbour", "a", opts)
	time.Sleep(300 * time.Millisecond) // the load at its wait for the bound
	// Meanwhile: a's new entry, and a's part saved anew by another
	// process (the old one dropped, the new one saved from the rows).
	insertArchival(t, db, archivalRow{Agent: "a", Content: "harbour entry written while a load waited"})
	if _, err := db.ExecContext(ctx, `DELETE FROM search_text_parts WHERE kind = 2 AND owner = 'a'`); err != nil {
		t.Fatal(err)
	}
	saveAgentsParts(t, db, opts)
	select {
	case a := <-done:
		t.Fatalf("the search answered (%d, %v) while the bound was taken", a.n, a.err)
	default:
	}
	release()
	a := <-done
	if a.err != nil {
		t.Fatal(a.err)
	}
	if a.n != 301 {
		t.Fatalf("%d results, want 301 (a's entries, the one written while its load waited too)", a.n)
	}
	if n := searchindex.TextPartsChanged(x); n != 1 {
		t.Fatalf("%d loads given up for a changed part, want 1", n)
	}
	if searchindex.TextCacheHeld(x, search.Archival, "a") {
		t.Fatal("a's partition was installed from a part that changed while its load waited")
	}
	got, err := x.Search(ctx, "harbour", search.Scope{Agent: "a"}, opts)
	if err != nil || len(got) != 301 {
		t.Fatalf("the next search: %d results (%v), want 301", len(got), err)
	}
	if n := searchindex.TextPartsStored(x); n != 1 {
		t.Fatalf("%d partitions loaded from their stored parts, want 1 (the part saved anew)", n)
	}
	if n := searchindex.TextRowsAnalyzed(x) - analyzed; n > 1 {
		t.Fatalf("%d rows analyzed, want at most 1 (the part saved anew used, the row written since the cache's position read by a catch-up)", n)
	}
}

// TestStoredPartKeptPastOtherOwnersWrites: another agent's messages or
// entries in a conversation log their neighbours too (about three
// entries a row); a quiet agent's stored part behind fewer rows than its
// cap (64 + 2 a row), if more entries, is used and caught up in the one
// statement of its load.
func TestStoredPartKeptPastOtherOwnersWrites(t *testing.T) {
	for _, kind := range []string{"messages", "archival"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "engram.db")
			db := openDBAt(t, path)
			ct := search.Messages
			if kind == "archival" {
				ct = search.Archival
			}
			for i := range 20 {
				if ct == search.Messages {
					insertMessage(t, db, "a", "user", fmt.Sprintf("harbour message %d of a", i), baseTime)
				} else {
					insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("harbour entry %d of a", i), Metadata: `{"conversation": "c"}`})
				}
			}
			opts := search.NewOptions().Mode(search.FTS).ContentTypes(ct).Limit(30)
			saveAgentsParts(t, db, opts)
			var before int64
			db.QueryRowContext(ctx, `SELECT COALESCE(max(seq), 0) FROM search_text_log`).Scan(&before)
			// b talks: 45 rows (well under 64 + 2*20 = 104 rows).
			for i := range 45 {
				if ct == search.Messages {
					insertMessage(t, db, "b", "user", fmt.Sprintf("chatter %d of b", i), baseTime)
				} else {
					insertArchival(t, db, archivalRow{Agent: "b", Content: fmt.Sprintf("chatter %d of b", i), Metadata: `{"conversation": "c"}`})
				}
			}
			var entries, ids int
			db.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT id) FROM search_text_log WHERE seq > ? AND kind = ?`, before, int(ct)).Scan(&entries, &ids)
			t.Logf("%s: %d log entries naming %d rows since the part (cap 104)", kind, entries, ids)
			second := partialIndex(t, db)
			defer second.Close()
			got, err := second.Search(ctx, "harbour", search.Scope{Agent: "a"}, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 20 {
				t.Fatalf("%d results, want 20", len(got))
			}
			if n, at := searchindex.TextPartsStored(second), searchindex.TextPartsAtOnce(second); n != 1 || at != 1 {
				t.Fatalf("stored parts used %d, caught up at once %d; want 1 and 1 (%d rows logged since, under the cap of 104; %d entries)", n, at, ids, entries)
			}
		})
	}
}

// TestStoredPartColumnsTheLoadCannotRead: search_text_parts is a cache
// whose rows a process cannot use are read again from the tables. SQLite
// keeps any value in a BIGINT column: a pos or replay_max that is text, a
// fraction, negative or past any cap leaves the part unused, and every
// search of the owner answers.
func TestStoredPartColumnsTheLoadCannotRead(t *testing.T) {
	for _, set := range []string{
		`pos = pos`,
		`pos = CAST(pos AS TEXT) || 'x'`,
		`replay_max = 'many'`,
		`pos = pos + 0.5`,
		`replay_max = 4000000000000000000`,
		`replay_max = -1`,
	} {
		t.Run(set, func(t *testing.T) {
			ctx := context.Background()
			db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
			insertArchival(t, db, archivalRow{Agent: "a", Content: "harbour entry one"})
			insertArchival(t, db, archivalRow{Agent: "b", Content: "harbour entry of b"})
			opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(30)
			saveAgentsParts(t, db, opts)
			if _, err := db.ExecContext(ctx, `UPDATE search_text_parts SET `+set+` WHERE kind = 2 AND owner = 'a'`); err != nil {
				t.Fatal(err)
			}
			second := partialIndex(t, db)
			for i := range 2 {
				got, err := second.Search(ctx, "harbour", search.Scope{Agent: "a"}, opts)
				if err != nil {
					t.Fatalf("search %d with a stored part's %s: %v", i, set, err)
				}
				if len(got) != 1 {
					t.Fatalf("%d results, want 1", len(got))
				}
			}
		})
	}
}

// TestFirstSearchLoadsKindsTogether: an agent's first search over its
// archival entries and messages in a partial cache loads the two
// partitions at once, not one after the other (each load here waits for
// the other to start).
func TestFirstSearchLoadsKindsTogether(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	for i := range 10 {
		insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("harbour entry %d", i)})
		insertMessage(t, db, "a", "user", fmt.Sprintf("harbour message %d", i), baseTime)
	}
	x := partialIndex(t, db)
	searchindex.SetTextPartsOff(x)
	started := map[search.ContentType]chan struct{}{search.Archival: make(chan struct{}), search.Messages: make(chan struct{})}
	var mu sync.Mutex
	together := map[search.ContentType]bool{}
	searchindex.SetTextLoadHook(x, func(ctx context.Context, kind search.ContentType, owner string) {
		other := search.Messages
		if kind == search.Messages {
			other = search.Archival
		}
		close(started[kind])
		select {
		case <-started[other]:
			mu.Lock()
			together[kind] = true
			mu.Unlock()
		case <-time.After(2 * time.Second):
		}
	})
	res, err := x.Search(ctx, "harbour", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival, search.Messages).Limit(30))
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 20 {
		t.Fatalf("%d results, want 20", len(res))
	}
	if !together[search.Archival] || !together[search.Messages] {
		t.Fatalf("the archival and message loads did not overlap (each saw the other start: %v)", together)
	}
}

// TestFirstSearchPoolOfOne: over a pool of one connection (an in-memory
// store's) and a bound that holds one load in flight at a time, an
// agent's first searches load a stored part (messages) beside a part
// read from the rows (archival entries, whose stored part a write
// dropped) without waiting for ever: a stored load does not hold its
// reservation of the bound while it waits for the connection that a
// load from the rows holds while it waits for the bound.
func TestFirstSearchPoolOfOne(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1500 {
		insertArchival(t, tx, archivalRow{Agent: "a", Content: fmt.Sprintf("harbour entry %d crane cargo %d lifts", i, i*7)})
		insertMessage(t, tx, "a", "user", fmt.Sprintf("harbour message %d crane %d lifts the cargo", i, i*3), baseTime)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival, search.Messages).Limit(10)
	first := boundIndex(t, db, 1<<30)
	if _, err := first.Search(ctx, "harbour", search.Scope{Agent: "a"}, opts); err != nil {
		t.Fatal(err)
	}
	searchindex.WaitTextPartSaves(first)
	held := searchindex.TextCacheHeldBytes(first)
	first.Close()
	for try := range 12 {
		for _, tenths := range []int64{6, 8, 10, 12} {
			// One of a's entries goes, and its stored archival part with it.
			if _, err := db.ExecContext(ctx, `DELETE FROM archival WHERE id = (SELECT max(id) FROM archival WHERE agent = 'a')`); err != nil {
				t.Fatal(err)
			}
			x := boundIndex(t, db, held*tenths/10)
			c, cancel := context.WithTimeout(ctx, 3*time.Second)
			start := time.Now()
			_, err := x.Search(c, "harbour", search.Scope{Agent: "a"}, opts)
			cancel()
			searchindex.WaitTextPartSaves(x)
			x.Close()
			if err != nil {
				t.Fatalf("try %d, bound %d/10 of the partitions: %v after %v", try, tenths, err, time.Since(start).Round(time.Millisecond))
			}
		}
	}
}

// TestStoredBlocksPartitionForgetsWords: a block's words leave its
// owner's stored blocks part when the block is indexed again after a
// rewrite (before the next search over blocks ranks), when the block is
// deleted, and when it moves to another owner (both owners' parts go); a
// new block leaves the part, which the next load catches up from the log;
// every process ranks as SQL does.
func TestStoredBlocksPartitionForgetsWords(t *testing.T) {
	ctx := context.Background()
	const secret = "zanzibarquux"
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	for i := range 4 {
		insertBlock(t, db, "a", fmt.Sprintf("notes-%d", i), fmt.Sprintf("ordinary notes %d", i))
		insertBlock(t, db, "b", fmt.Sprintf("notes-%d", i), fmt.Sprintf("ordinary notes of b %d", i))
	}
	sqlx, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer sqlx.Close()
	holding := func() int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM search_text_parts WHERE kind = 1 AND instr(data, ?) > 0`, secret).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	stored := func(owner string) bool { return blocksPartStored(t, db, owner) }
	// A process's first searches over blocks: the partitions load (from
	// the stored parts where there are), rank as SQL does, and those read
	// from the rows are saved.
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Blocks)
	process := func() (loadedStored int64) {
		t.Helper()
		x := partialIndex(t, db)
		for _, owner := range []string{"a", "b"} {
			for _, q := range []string{"ordinary notes", "vault " + secret} {
				got, err := x.Search(ctx, q, search.Scope{Agent: owner}, opts)
				if err != nil {
					t.Fatal(err)
				}
				sameAsSQLWith(t, ctx, sqlx, q, owner, opts, got)
			}
		}
		searchindex.WaitTextPartSaves(x)
		n := searchindex.TextPartsStored(x)
		x.Close()
		return n
	}
	vault := insertBlock(t, db, "a", "vault", "the vault code is "+secret)
	process()
	if !stored("a") || !stored("b") || holding() != 1 {
		t.Fatalf("after a first process: parts of a %v, of b %v, %d holding the block's words; want both, 1", stored("a"), stored("b"), holding())
	}
	if n := process(); n != 2 {
		t.Fatalf("a second process loaded %d blocks partitions from stored parts, want 2", n)
	}
	// A new block adds words: the part stays, and the next process's
	// load adds the block from the log.
	plans := insertBlock(t, db, "a", "plans", "ordinary plans for the vault")
	if !stored("a") {
		t.Fatal("a new block took its owner's stored part")
	}
	if n := process(); n != 2 {
		t.Fatalf("after a new block, %d blocks partitions loaded from stored parts, want 2", n)
	}
	// A block's indexed row deleted by hand (and written again) takes the
	// part too.
	if _, err := db.ExecContext(ctx, `DELETE FROM fts_blocks_indexed WHERE id = ?`, plans); err != nil {
		t.Fatal(err)
	}
	if stored("a") {
		t.Fatal("a's part outlived a delete of one of its blocks' indexed rows")
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO fts_blocks_indexed (id, label, description, rendered)
		SELECT id, label, description, rendered FROM blocks WHERE id = ?`, plans); err != nil {
		t.Fatal(err)
	}
	process()

	// Rewritten: the re-index before the next search over blocks takes
	// the part; that process reads the rows and saves the block's new
	// words.
	if _, err := db.ExecContext(ctx, `UPDATE blocks SET rendered = 'the vault is empty' WHERE id = ?`, vault); err != nil {
		t.Fatal(err)
	}
	if n := process(); n != 1 {
		t.Fatalf("after a rewrite, %d blocks partitions loaded from stored parts, want 1 (b's)", n)
	}
	if n := holding(); n != 0 || !stored("a") {
		t.Fatalf("after a rewrite: %d stored parts hold the old words, a's part stored again %v", n, stored("a"))
	}

	// Deleted: the part goes with the block.
	if _, err := db.ExecContext(ctx, `UPDATE blocks SET rendered = ? WHERE id = ?`, "the vault code is "+secret, vault); err != nil {
		t.Fatal(err)
	}
	process()
	if holding() != 1 {
		t.Fatalf("%d stored parts hold the block's words, want 1", holding())
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM blocks WHERE id = ?`, vault); err != nil {
		t.Fatal(err)
	}
	if n := holding(); n != 0 || stored("a") || !stored("b") {
		t.Fatalf("after the block's delete: %d stored parts hold its words, a's part %v (want gone), b's %v (want kept)", n, stored("a"), stored("b"))
	}

	// Moved to another owner: both owners' parts go.
	vault = insertBlock(t, db, "a", "vault", "the vault code is "+secret)
	process()
	if holding() != 1 || !stored("a") || !stored("b") {
		t.Fatalf("%d stored parts hold the block's words (want 1), parts of a %v, of b %v", holding(), stored("a"), stored("b"))
	}
	if _, err := db.ExecContext(ctx, `UPDATE blocks SET owner = 'b' WHERE id = ?`, vault); err != nil {
		t.Fatal(err)
	}
	if stored("a") || stored("b") {
		t.Fatalf("after the block moved: parts of a %v, of b %v, want both gone", stored("a"), stored("b"))
	}
	process()
	if n := process(); n != 2 || holding() != 1 {
		t.Fatalf("after the move: %d blocks partitions loaded from stored parts (want 2), %d holding the block's words (want 1: b's)", n, holding())
	}
}

// blocksPartStored reports whether owner's blocks partition is stored in
// db (search_text_parts, kind 1).
func blocksPartStored(t *testing.T, db *sql.DB, owner string) bool {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(), `SELECT count(*) FROM search_text_parts WHERE kind = 1 AND owner = ?`, owner).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n == 1
}

// TestStoredBigPartReservationReleasedOnFailure: a part too big to decode
// from the driver's buffer is copied and reserved while its statement
// still reads the log's entries after it; a search whose context ends
// meanwhile leaves none of the bound reserved (the lone-load rule, and
// every load after it, would otherwise wait on it for ever).
func TestStoredBigPartReservationReleasedOnFailure(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(5)
	bigArchivalPart(t, db, opts)
	// Entries logged since the part: the statement reads them after it.
	if _, err := db.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 30000)
		INSERT INTO archival (agent, content, created_at, valid_from) SELECT 'b', 'other ' || i, 0, 0 FROM n`); err != nil {
		t.Fatal(err)
	}
	x := boundIndex(t, db, 1<<30)
	if _, err := x.Search(ctx, "harbour", search.Scope{Agent: "nobody"}, opts); err != nil { // (the statistics)
		t.Fatal(err)
	}
	failed := 0
	for i := range 200 {
		d := time.Duration(i%40) * 500 * time.Microsecond
		sctx, cancel := context.WithTimeout(ctx, d)
		_, err := x.Search(sctx, "harbour", search.Scope{Agent: "a"}, opts)
		cancel()
		if n := searchindex.TextInflight(x); n != 0 {
			t.Fatalf("search %d (deadline %v: %v): %d B of the bound still reserved, nothing loading", i, d, err, n)
		}
		if err == nil {
			break
		}
		failed++
	}
	t.Logf("%d searches ended by their deadline before one loaded a's part", failed)
}

// TestStoredBigPartBesideAnotherLoad: a part too big to decode from the
// driver's buffer, whose decode fits the bound but not its decode and
// copy together, is not read as a part (it could load only with nothing
// else in flight, never under steady loads): its owner's rows are, beside
// another load.
func TestStoredBigPartBesideAnotherLoad(t *testing.T) {
	ctx := context.Background()
	db := openDBAt(t, filepath.Join(t.TempDir(), "engram.db"))
	opts := search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(5)
	size := bigArchivalPart(t, db, opts)
	limit := size * 5 / 2 // 2*size fits, 3*size does not
	x := boundIndex(t, db, limit)
	release := searchindex.HoldTextReservation(x, size/10) // another load in flight, steadily
	defer release()
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	start := time.Now()
	got, err := x.Search(sctx, "harbour", search.Scope{Agent: "a"}, opts)
	if err != nil {
		t.Fatalf("search of a part of %d B beside a load holding %d B of a bound of %d B (after %v): %v", size, size/10, limit, time.Since(start), err)
	}
	if len(got) != 5 {
		t.Fatalf("%d results, want 5", len(got))
	}
}
