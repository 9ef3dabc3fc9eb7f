package memory_test

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/blocks"
	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/internal/sqlitedriver"
	"github.com/engram-go/engram/internal/storeaccess"
	"github.com/engram-go/engram/memory"
	"github.com/engram-go/engram/search"
)

// dateMode is one way a store answers full-text queries: in SQL or by
// the text cache, on SQLite or PostgreSQL.
type dateMode struct {
	name, target string
	opts         *memory.Options
}

func dateModes(t *testing.T) []dateMode {
	modes := []dateMode{
		{"sqlite sql", filepath.Join(t.TempDir(), "x.db"), &memory.Options{TextCacheBytes: -1}},
		{"sqlite text cache", filepath.Join(t.TempDir(), "y.db"), nil},
	}
	if !testing.Short() {
		pg := pgtest.Start(t)
		modes = append(modes, dateMode{"postgres sql", pg.NewDatabase(t), &memory.Options{TextCacheBytes: -1}},
			dateMode{"postgres text cache", pg.NewDatabase(t), nil})
	}
	return modes
}

// expectFirst checks that each query's first result of content type ct
// is its want, after warming the text cache in the cache modes.
func expectFirst(t *testing.T, c *memory.Store, mode dateMode, ct search.ContentType, cases []struct{ q, want string }) {
	t.Helper()
	ctx := context.Background()
	if mode.opts == nil {
		if err := storeaccess.Index(c).WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range cases {
		res, err := c.Agent("a").Search(ctx, tc.q, search.NewOptions().Mode(search.FTS).ContentTypes(ct))
		if err != nil {
			t.Fatal(err)
		}
		if len(res) == 0 || res[0].Content != tc.want {
			var got []string
			for _, r := range res {
				got = append(got, r.Content)
			}
			t.Errorf("%s: %q found %q; want %q first", mode.name, tc.q, got, tc.want)
		}
	}
}

// TestMessageDateIsSearchable: a message's full-text entry holds its date
// (created_at, UTC, as "8 May 2023"), so a question naming the month and
// year, or the day, finds the messages said then, ranked in SQL and by
// the text cache alike; a message of another month of that year ranks
// below them. On SQLite and PostgreSQL.
func TestMessageDateIsSearchable(t *testing.T) {
	ctx := context.Background()
	for _, mode := range dateModes(t) {
		c := openFile(t, mode.target, mode.opts)
		at := func(s string) time.Time {
			tm, err := time.Parse(time.RFC3339, s)
			if err != nil {
				t.Fatal(err)
			}
			return tm
		}
		for _, m := range []memory.Message{
			{Role: memory.RoleUser, Content: "We went hiking at the lake.", BatchID: "s1", CreatedAt: at("2023-05-08T13:56:00Z")},
			{Role: memory.RoleUser, Content: "We went hiking in the hills.", BatchID: "s2", CreatedAt: at("2023-07-02T09:00:00Z")},
			{Role: memory.RoleUser, Content: "We went to the beach.", BatchID: "s3", CreatedAt: at("2022-05-03T23:59:59+02:00")}, // 21:59 UTC
		} {
			if _, err := c.Agent("a").Messages().AppendMany(ctx, []memory.Message{m}); err != nil {
				t.Fatal(err)
			}
		}
		expectFirst(t, c, mode, search.Messages, []struct{ q, want string }{
			{"What did we do in May 2023?", "We went hiking at the lake."},
			{"Where did we go on 8 May, 2023?", "We went hiking at the lake."},
			{"What happened on 3 May 2022", "We went to the beach."},
			{"July 2023", "We went hiking in the hills."},
		})
	}
}

// TestArchivalISODateIsSearchable: an archival entry whose metadata holds
// an ISO 8601 date ("2023-05-08", or a timestamp beginning with one) is
// indexed with that date's words too ("8 May 2023"), so a question naming
// the month finds it as it finds a message of that day; SQL and text
// cache, SQLite and PostgreSQL.
func TestArchivalISODateIsSearchable(t *testing.T) {
	ctx := context.Background()
	for _, mode := range dateModes(t) {
		c := openFile(t, mode.target, mode.opts)
		if _, err := c.Agent("a").Archival().InsertBatch(ctx, []memory.ArchivalEntry{
			{Content: "Went hiking at the lake.", Metadata: map[string]any{"date": "2023-05-08"}},
			{Content: "Went hiking in the hills.", Metadata: map[string]any{"date": "2023-07-02T09:00:00Z"}},
			{Content: "Went to the beach.", Metadata: map[string]any{"when": map[string]any{"day": "2022-05-03"}}},
			{Content: "Bought a 2023-13-45 calendar.", Metadata: map[string]any{"note": "2023-13-45", "n": 5}},
		}, nil); err != nil {
			t.Fatal(err)
		}
		expectFirst(t, c, mode, search.Archival, []struct{ q, want string }{
			{"What did I do in May 2023?", "Went hiking at the lake."},
			{"on 8 May, 2023", "Went hiking at the lake."},
			{"July 2023", "Went hiking in the hills."},
			{"3 May 2022", "Went to the beach."},
		})
	}
}

// TestStampsOutsideWhatAStoreHolds: a time a store's int64 of Unix
// nanoseconds cannot hold (a message from 2300 read back as from 1715) is
// refused with ErrInvalidArgument, on every way in, and nothing is
// written; the first and last nanosecond it holds are kept, and a
// message at the last is found by a search in SQL and by the text cache.
func TestStampsOutsideWhatAStoreHolds(t *testing.T) {
	ctx := context.Background()
	late := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	last, first := time.Unix(0, math.MaxInt64), time.Unix(0, math.MinInt64)
	early := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, mode := range dateModes(t) {
		c := openFile(t, mode.target, mode.opts)
		a := c.Agent("a")
		for _, at := range []time.Time{late, early} {
			if _, err := a.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "far off", BatchID: "b", CreatedAt: at}); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Errorf("%s: message at %v: %v, want ErrInvalidArgument", mode.name, at, err)
			}
			if _, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: "far off", CreatedAt: at}); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Errorf("%s: archival entry at %v: %v, want ErrInvalidArgument", mode.name, at, err)
			}
			if _, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: "far off", ValidFrom: at}); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Errorf("%s: archival entry valid from %v: %v, want ErrInvalidArgument", mode.name, at, err)
			}
		}
		if got, err := a.Messages().List(ctx, nil); err != nil || len(got) != 0 {
			t.Fatalf("%s: %d messages after refused appends (%v)", mode.name, len(got), err)
		}
		for _, at := range []time.Time{last, first} {
			if _, err := a.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "the tide at " + at.UTC().String(), BatchID: "b", CreatedAt: at}); err != nil {
				t.Fatalf("%s: message at %v: %v", mode.name, at, err)
			}
		}
		if _, err := a.Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: 1, LastMessageID: 1, Content: "s", CreatedAt: late}); !errors.Is(err, memory.ErrInvalidArgument) {
			t.Errorf("%s: summary at %v: %v, want ErrInvalidArgument", mode.name, late, err)
		}
		for _, d := range []*memory.Dump{
			{Version: 1, Messages: []memory.Message{{Agent: "b", Role: memory.RoleUser, Content: "far off", BatchID: "b", CreatedAt: late}}},
			{Version: 1, Archival: []memory.ArchivalEntry{{Agent: "b", Content: "far off", CreatedAt: early}}},
		} {
			if _, err := c.Import(ctx, d); !errors.Is(err, memory.ErrInvalidArgument) {
				t.Errorf("%s: import of a row outside the range: %v, want ErrInvalidArgument", mode.name, err)
			}
		}
		if got, err := c.Agent("b").Messages().List(ctx, nil); err != nil || len(got) != 0 {
			t.Fatalf("%s: %d messages after a refused import (%v)", mode.name, len(got), err)
		}
		if _, err := c.Import(ctx, &memory.Dump{Version: 1, Profiles: []memory.DumpProfile{{Agent: "b", Profile: memory.Profile{System: "s", UpdatedAt: late}}}}); !errors.Is(err, memory.ErrInvalidArgument) {
			t.Errorf("%s: import of a profile updated in 2300: %v, want ErrInvalidArgument", mode.name, err)
		}
		// The same dump at a time the store holds is imported.
		if _, err := c.Import(ctx, &memory.Dump{Version: 1, Messages: []memory.Message{{Agent: "b", Role: memory.RoleUser, Content: "near", BatchID: "b", CreatedAt: last}}}); err != nil {
			t.Fatalf("%s: import at the last nanosecond: %v", mode.name, err)
		}
		if mode.opts == nil {
			if err := storeaccess.Index(c).WarmTextCache(ctx); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []struct {
			q    memory.MessageQuery
			want int
		}{{memory.MessageQuery{Since: late}, 0}, {memory.MessageQuery{Until: late}, 2}, {memory.MessageQuery{Since: early}, 2}, {memory.MessageQuery{Until: early}, 0}} {
			if got, err := a.Messages().List(ctx, &q.q); err != nil || len(got) != q.want {
				t.Errorf("%s: messages since %v until %v: %d (%v), want %d", mode.name, q.q.Since, q.q.Until, len(got), err, q.want)
			}
		}
		res, err := a.Search(ctx, "tide", search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages))
		if err != nil || len(res) != 2 {
			t.Errorf("%s: the messages at the first and last nanosecond: %d found (%v), want 2", mode.name, len(res), err)
		}
	}
}

// TestHandEditedTimesAreRead: SQLite keeps what a hand edit leaves in a
// time column (a real, text, a blob); the rows are still listed, read,
// searched and exported, each read where SQLite orders it (a real by its
// floor, text and blobs as the last nanosecond).
func TestHandEditedTimesAreRead(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openFile(t, path, nil)
	a := s.Agent("a")
	for i := range 3 {
		if _, err := a.Messages().Append(ctx, memory.Message{Role: memory.RoleUser, Content: "the tide", BatchID: "b"}); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Archival().Insert(ctx, memory.ArchivalEntry{Content: "the tide " + string(rune('a'+i))}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := a.Messages().SaveSummary(ctx, memory.Summary{FirstMessageID: 1, LastMessageID: 2, Content: "tides"}); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, err := a.CreateBlock(ctx, memory.BlockSpec{Label: "board"})
	must(err)
	must(a.Block("board").Share(ctx, "cy", blocks.ReadWrite))
	_, err = s.Agent("cy").Shared("a", "board").Propose(ctx, memory.Edit{Op: blocks.OpAppendText, Text: "more\n"}, "")
	must(err)
	_, err = a.Archival().Supersede(ctx, 3, memory.ArchivalEntry{Content: "the tide again"})
	must(err)
	must(a.PutContextLibrary(ctx, []memory.LibraryEntry{{ID: "f", Kind: "file", Title: "f", Content: "x"}}))
	must(a.SetProfile(ctx, memory.Profile{System: "you are a"}))
	db, err := sql.Open(sqlitedriver.Name, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{
		`UPDATE messages SET created_at = 1.5 WHERE id = 1`, `UPDATE messages SET created_at = 'soon' WHERE id = 2`,
		`UPDATE archival SET created_at = x'00', valid_from = 'later' WHERE id = 1`, `UPDATE archival SET created_at = -1.5 WHERE id = 2`,
		`UPDATE summaries SET created_at = 'then'`, `UPDATE batches SET created_at = 2.5`,
		`UPDATE proposals SET created_at = 1.5, decided_at = 'x'`, `UPDATE archival SET valid_to = 'x' WHERE id = 3`,
		`UPDATE shares SET created_at = 1.5`, `UPDATE blocks SET created_at = 1.5, updated_at = 'x'`,
		`UPDATE context_library SET updated_at = 1.5`, `UPDATE agent_profiles SET updated_at = 1.5`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	// A fresh store: nothing cached from before the edits.
	s.Close()
	s = openFile(t, path, nil)
	a = s.Agent("a")
	msgs, err := a.Messages().List(ctx, nil)
	if err != nil || len(msgs) != 3 {
		t.Fatalf("messages: %d, %v", len(msgs), err)
	}
	if got := msgs[0].CreatedAt.UnixNano(); got != 1 {
		t.Errorf("a created_at of 1.5 reads as %d ns, want 1", got)
	}
	if got := msgs[1].CreatedAt; !got.Equal(time.Unix(0, math.MaxInt64)) {
		t.Errorf("a created_at of text reads as %v, want the last nanosecond", got)
	}
	entries, err := a.Archival().List(ctx, &memory.ArchivalQuery{IncludeSuperseded: true})
	if err != nil || len(entries) != 4 {
		t.Fatalf("archival: %d, %v", len(entries), err)
	}
	if bs, err := a.Blocks(ctx); err != nil || len(bs) != 1 {
		t.Fatalf("blocks: %d, %v", len(bs), err)
	}
	if _, err := a.Profile(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Archival().Get(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Messages().LatestSummary(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Messages().Batches(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ty := range []search.ContentType{search.Messages, search.Archival} {
		if res, err := a.Search(ctx, "tide", search.NewOptions().Mode(search.FTS).ContentTypes(ty)); err != nil || len(res) != 3 {
			t.Errorf("%s search: %d, %v", ty, len(res), err)
		}
	}
	d, err := s.Export(ctx)
	if err != nil || len(d.Messages) != 3 || len(d.Archival) != 4 || len(d.Summaries) != 1 || len(d.Proposals) != 1 {
		t.Fatalf("export: %v", err)
	}
}
