package searchindex_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"maps"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/engram-go/engram/driver"
	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// A partition load reads an owner's messages once and finds each one's
// neighbours among them (the same batch, the sequence number one below
// and above) in Go; a fresh partial cache must rank as a whole cache,
// which reads them through the engine's join, bit for bit: at the ends
// of int64 (no step wraps around), in an empty batch, in batches whose
// names differ in case, across gaps, with another owner's messages in the same batch, after
// moves between batches and owners.
func TestTextCachePartialMessageNeighboursLikeWhole(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		db := openDB(t)
		write := txWriter(db)
		// A hand edit may leave a sequence number a real or text (the
		// column's affinity keeps what does not read as an integer): the
		// join steps it as SQLite does (1.5 is next to 2.5, '2x' to 1).
		messageNeighboursLikeWhole(t, db, sqlite.SearchDialect{}, write,
			`UPDATE messages SET seq = 1.5 WHERE agent = 'b' AND batch_id = 'y' AND seq = 1`,
			`UPDATE messages SET seq = 2.5 WHERE agent = 'b' AND batch_id = 'y' AND seq = 2`,
			`UPDATE messages SET seq = '2x' WHERE agent = 'b' AND batch_id = 'x' AND seq = 3`,
			`UPDATE messages SET seq = 'z' WHERE agent = 'a' AND batch_id = 'y' AND seq = 2`,
		)
	})
	t.Run("postgres", func(t *testing.T) {
		_, b := openPGStore(t)
		messageNeighboursLikeWhole(t, b.DB(), b.SearchDialect(), b.Write)
	})
}

func messageNeighboursLikeWhole(t *testing.T, db *sql.DB, d driver.Dialect, write func(context.Context, func(*sql.Tx) error) error, handEdits ...string) {
	ctx := context.Background()
	exec := func(q string, args ...any) {
		t.Helper()
		if err := write(ctx, func(tx *sql.Tx) error { _, err := tx.ExecContext(ctx, q, args...); return err }); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	vocab := strings.Fields(`apple banana cherry damson elder fig grape hazel iris juniper kale lemon mango
		nectar olive peach quince radish sage thyme`)
	type msg struct {
		agent string
		batch string
		seq   int64
	}
	msgs := []msg{
		{"a", "x", math.MinInt64}, {"a", "x", math.MinInt64 + 1}, {"a", "x", -1}, {"a", "x", 0}, {"a", "x", 1},
		{"a", "x", 3}, {"a", "x", math.MaxInt64 - 1}, {"a", "x", math.MaxInt64},
		{"a", "", 1}, {"a", "", 2}, {"a", "X", 2},
		{"a", "y", 1}, {"a", "y", 2}, {"a", "y", 3},
		{"b", "x", 2}, {"b", "x", 3}, {"b", "y", 1}, {"b", "y", 2},
	}
	for i, m := range msgs {
		content := fmt.Sprintf("%s %s %s", vocab[i%len(vocab)], vocab[(i*7+3)%len(vocab)], vocab[(i*3+1)%len(vocab)])
		exec(`INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES (?, 'user', ?, ?, ?, ?)`,
			m.agent, content, m.batch, m.seq, baseTime.UnixNano())
	}
	check := func(step string) {
		t.Helper()
		o := func() *search.Options {
			return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(100)
		}
		partialRanksLikeWhole(t, db, d, write, step, []string{"a", "b"}, vocab, nil, o)
	}
	check("inserts")
	for _, step := range append([]string{
		`UPDATE messages SET batch_id = 'y', seq = 4 WHERE agent = 'a' AND batch_id = 'x' AND seq = 0`,
		`UPDATE messages SET agent = 'b' WHERE agent = 'a' AND batch_id = 'y' AND seq = 3`,
		`UPDATE messages SET batch_id = 'X' WHERE agent = 'a' AND batch_id = 'x' AND seq = 1`,
		`DELETE FROM messages WHERE agent = 'a' AND batch_id = 'x' AND seq = 3`,
	}, handEdits...) {
		exec(step)
		check(step)
	}
}

// A hand edit can leave a message's text columns a blob on SQLite (a
// TEXT column keeps what it is given): searches over messages, by a
// whole cache, a partial one and in SQL, go on answering, the blob read
// as its bytes' text.
func TestMessageBlobColumnsSearchable(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	for i, c := range []string{"apple banana", "banana cherry", "cherry damson"} {
		insertMessage(t, db, "a", "user", c, baseTime.Add(time.Duration(i)*time.Second))
	}
	for _, q := range []string{
		`UPDATE messages SET batch_id = CAST('b1' AS BLOB) WHERE seq = 2`,
		`UPDATE messages SET role = x'75736572', name = x'6e', tool_call_id = x'00ff' WHERE seq = 3`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, c := range []struct {
		name    string
		bytes   int64
		partial bool
	}{{"whole", 1 << 30, false}, {"partial", 1 << 30, true}, {"sql", -1, false}} {
		t.Run(c.name, func(t *testing.T) {
			x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: c.bytes, VectorCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if c.partial {
				searchindex.ForceTextPartial(x)
			}
			_ = x.WarmTextCache(ctx)
			res, err := x.Search(ctx, "banana cherry", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(10))
			if err != nil {
				t.Fatalf("search: %v", err)
			}
			if len(res) != 3 {
				t.Fatalf("%d results, want 3: %v", len(res), keys(res))
			}
			for _, r := range res {
				if r.Metadata["batch_id"] != "b1" {
					t.Errorf("message %d: batch_id %v (%T), want b1", r.ID, r.Metadata["batch_id"], r.Metadata["batch_id"])
				}
			}
		})
	}
}

// partialRanksLikeWhole opens a whole text cache and a partial one on db
// and holds the partial cache's rankings (loaded from the rows as they
// are), and those of the caches others, to the whole one's, bit for bit,
// for each agent, query and options; it fails when no result was
// compared.
func partialRanksLikeWhole(t *testing.T, db *sql.DB, d driver.Dialect, write func(context.Context, func(*sql.Tx) error) error,
	step string, agents, queries []string, others map[string]*searchindex.Index, opts ...func() *search.Options) {
	t.Helper()
	ctx := context.Background()
	open := func(partial bool) *searchindex.Index {
		x, err := searchindex.NewIndex(ctx, db, d, nil,
			&searchindex.IndexOptions{Write: write, TextCacheBytes: 1 << 30, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		if partial {
			searchindex.ForceTextPartial(x)
		}
		return x
	}
	whole, loaded, bySel := open(false), open(true), open(false)
	defer whole.Close()
	defer loaded.Close()
	defer bySel.Close()
	// A whole copy built reading every row with the store-wide query (the
	// engine joining each row's neighbours), as a reference for the
	// whole one, built owner by owner.
	searchindex.SetTextReadBySel(bySel)
	for _, x := range []*searchindex.Index{whole, bySel} {
		if err := x.WarmTextCache(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := loaded.WarmTextCache(ctx); !errors.Is(err, searchindex.ErrCacheBudget) {
		t.Fatalf("WarmTextCache of a partial cache: %v, want searchindex.ErrCacheBudget", err)
	}
	passLikeSel(t, whole, step)
	compared := 0
	for _, agent := range agents {
		for _, q := range queries {
			for i, o := range opts {
				want, err := whole.Search(ctx, q, search.Scope{Agent: agent}, o())
				if err != nil {
					t.Fatal(err)
				}
				caches := map[string]*searchindex.Index{"partial": loaded, "whole, by the store-wide query": bySel}
				maps.Copy(caches, others)
				for name, x := range caches {
					var got []search.Result
					for deadline := time.Now().Add(10 * time.Second); ; {
						before := searchindex.TextCacheAnswers(x)
						if got, err = x.Search(ctx, q, search.Scope{Agent: agent}, o()); err != nil {
							t.Fatalf("after %s, %s %q: %s cache: %v", step, agent, q, name, err)
						}
						if searchindex.TextCacheAnswers(x) > before {
							break
						}
						if time.Now().After(deadline) {
							t.Fatalf("after %s: the %s cache does not answer", step, name)
						}
						time.Sleep(10 * time.Millisecond) // a pass computes the statistics
					}
					if err := sameBits(want, got); err != nil {
						t.Fatalf("after %s, %s %q (options %d), %s cache: %v\nwhole %v\n%s %v", step, agent, q, i, name, err, keys(want), name, keys(got))
					}
				}
				compared += len(want)
			}
		}
	}
	if compared == 0 {
		t.Fatalf("after %s: nothing compared", step)
	}
}

// passLikeSel holds a statistics pass over x's archival entries, which
// reads them owner by owner and finds their neighbours as a partition
// load does, to one reading every entry with the store-wide query (the
// engine joining the neighbours): the same rows, tokens and document
// frequencies. (Messages are read with the store-wide query either way.)
func passLikeSel(t *testing.T, x *searchindex.Index, step string) {
	t.Helper()
	ctx := context.Background()
	for _, kind := range []search.ContentType{search.Archival} {
		rows, tokens, df, err := searchindex.TextStatsOf(ctx, x, kind, false)
		if err != nil {
			t.Fatal(err)
		}
		wantRows, wantTokens, wantDF, err := searchindex.TextStatsOf(ctx, x, kind, true)
		if err != nil {
			t.Fatal(err)
		}
		if rows != wantRows || tokens != wantTokens || !maps.Equal(df, wantDF) {
			for term, n := range wantDF {
				if df[term] != n {
					t.Errorf("after %s: %v pass: df[%q] %d, want %d", step, kind, term, df[term], n)
				}
			}
			for term, n := range df {
				if _, ok := wantDF[term]; !ok {
					t.Errorf("after %s: %v pass: df[%q] %d, want none", step, kind, term, n)
				}
			}
			t.Fatalf("after %s: %v pass: %d rows, %d tokens, %d terms; want %d, %d, %d", step, kind, rows, tokens, len(df), wantRows, wantTokens, len(wantDF))
		}
	}
}

// A partition load writes each message's date words in Go, from
// created_at; a whole cache reads them from the engine's MessageDate.
// They rank alike, bit for bit, at the edges: before 1970 (no date),
// 1970's first second, one nanosecond before a day ends, single-digit
// days, each month, and the last nanosecond an int64 holds (2262).
func TestTextCachePartialMessageDatesLikeWhole(t *testing.T) {
	created := []int64{-1, math.MinInt64, 0, 1, 8*86400e9 + 86400e9 - 1, math.MaxInt64,
		time.Date(2023, time.May, 8, 23, 59, 59, 999999999, time.UTC).UnixNano(),
		time.Date(1999, time.December, 31, 23, 59, 59, 0, time.UTC).UnixNano(),
		time.Date(2000, time.February, 29, 0, 0, 0, 0, time.UTC).UnixNano()}
	for m := time.January; m <= time.December; m++ {
		created = append(created, time.Date(2024, m, int(m)*2, 12, 0, 0, 0, time.UTC).UnixNano())
	}
	queries := []string{"1970", "2262", "2023", "1999", "2000", "2024", "1", "8", "9", "31", "29", "11",
		"January", "February", "May", "December", "April 2024", "tide", "tide 1970"}
	run := func(t *testing.T, db *sql.DB, d driver.Dialect, write func(context.Context, func(*sql.Tx) error) error) {
		ctx := context.Background()
		for i, c := range created {
			if err := write(ctx, func(tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO messages (agent, role, content, batch_id, seq, created_at) VALUES ('a', 'user', ?, ?, 1, ?)`,
					fmt.Sprintf("the tide %d", i), fmt.Sprint("b", i), c)
				return err
			}); err != nil {
				t.Fatal(err)
			}
		}
		o := func() *search.Options {
			return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(100)
		}
		partialRanksLikeWhole(t, db, d, write, "inserts", []string{"a"}, queries, nil, o)
	}
	t.Run("sqlite", func(t *testing.T) {
		db := openDB(t)
		run(t, db, sqlite.SearchDialect{}, txWriter(db))
		// SQLite keeps what a hand edit leaves in created_at: a real,
		// text, a blob. Every search still answers (one such row failed
		// every search over messages, in SQL and in the caches), and a
		// partial cache ranks as a whole one.
		insertArchival(t, db, archivalRow{Agent: "a", Content: "the tide in the archive"})
		for i, v := range []string{"1.5", "'abc'", "x'00'", "1e300", "-1e300", "'1683590400000000000'", "' 12 '", "'1e18'"} {
			for _, table := range []string{"messages", "archival"} {
				if _, err := db.Exec(fmt.Sprintf(`UPDATE %s SET created_at = %s WHERE id = %d`, table, v, 1+i%2)); err != nil {
					t.Fatal(err)
				}
			}
			o := func() *search.Options {
				return search.NewOptions().Mode(search.FTS).ContentTypes(search.Messages).Limit(100)
			}
			partialRanksLikeWhole(t, db, sqlite.SearchDialect{}, txWriter(db), "created_at = "+v, []string{"a"}, queries, nil, o)
			inSQL, err := searchindex.NewIndex(context.Background(), db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: -1, VectorCacheBytes: -1})
			if err != nil {
				t.Fatal(err)
			}
			for _, ty := range []search.ContentType{search.Messages, search.Archival} {
				got, err := inSQL.Search(context.Background(), "tide", search.Scope{Agent: "a"}, search.NewOptions().Mode(search.FTS).ContentTypes(ty))
				if err != nil || len(got) == 0 {
					t.Fatalf("created_at = %s: %s in SQL: %d results, %v", v, ty, len(got), err)
				}
			}
			inSQL.Close()
		}
	})
	t.Run("postgres", func(t *testing.T) {
		_, b := openPGStore(t)
		run(t, b.DB(), b.SearchDialect(), b.Write)
	})
}

// txWriter runs each write in a transaction of its own on db, as a
// backend's Write does.
func txWriter(db *sql.DB) func(context.Context, func(*sql.Tx) error) error {
	return func(ctx context.Context, f func(*sql.Tx) error) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := f(tx); err != nil {
			return err
		}
		return tx.Commit()
	}
}
