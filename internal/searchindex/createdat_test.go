package searchindex_test

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/searchindex"
	"github.com/engram-go/engram/memory/sqlite"
	"github.com/engram-go/engram/search"
)

// handEditedCreated are created_at values a hand edit can leave on
// SQLite, whose INTEGER affinity keeps reals, text and blobs as they are.
var handEditedCreated = []string{"1.5", "-1.5", "1800000000000.5", "'abc'", "'1000000000000x'", "'0x1p40'",
	"' 12 x'", "x'00'", "x'3132'", "1e300", "-1e300", "9.3e18", "-9223372036854775808.0", "9223372036854775807", "-9223372036854775808"}

// An archival entry's neighbours in its owner's stream depend on
// created_at, which the engine's arithmetic reads in its own way when a
// hand edit left other than an integer: a partial cache ranks as a whole
// one (which reads the neighbours from archival_links) whatever is there.
func TestArchivalHandEditedCreatedLikeWhole(t *testing.T) {
	for _, v := range handEditedCreated {
		t.Run(v, func(t *testing.T) {
			db := openDB(t)
			for i, c := range []string{"apple banana", "cherry damson", "elder fig", "grape hazel"} {
				insertArchival(t, db, archivalRow{Agent: "a", Content: c, Created: baseTime.Add(time.Duration(i) * time.Minute)})
			}
			for _, q := range []string{`UPDATE archival SET created_at = 0 WHERE id = 1`, `UPDATE archival SET created_at = ` + v + ` WHERE id = 2`} {
				if _, err := db.Exec(q); err != nil {
					t.Fatal(err)
				}
			}
			o := func() *search.Options {
				return search.NewOptions().Mode(search.FTS).ContentTypes(search.Archival).Limit(100)
			}
			partialRanksLikeWhole(t, db, sqlite.SearchDialect{}, txWriter(db), "created_at = "+v, []string{"a"},
				[]string{"apple", "cherry", "fig", "hazel", "banana damson"}, nil, o)
		})
	}
}

// A time window keeps the same rows in SQL, which compares what
// created_at holds as SQLite orders values (a real by its value, text
// and blobs after every number), in a whole text cache and in a partial
// one, whatever a hand edit left there; and with no window every row is
// found, the last nanosecond's too.
func TestTimeWindowsKeepTheSameRows(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	for i, v := range handEditedCreated {
		insertMessage(t, db, "a", "user", fmt.Sprintf("tide %d", i), baseTime)
		insertArchival(t, db, archivalRow{Agent: "a", Content: fmt.Sprintf("tide %d", i)})
		for _, table := range []string{"messages", "archival"} {
			if _, err := db.Exec(fmt.Sprintf(`UPDATE %s SET created_at = %s WHERE id = %d`, table, v, i+1)); err != nil {
				t.Fatal(err)
			}
		}
	}
	open := func(bytes int64, partial bool) *searchindex.Index {
		x, err := searchindex.NewIndex(ctx, db, sqlite.SearchDialect{}, nil, &searchindex.IndexOptions{TextCacheBytes: bytes, VectorCacheBytes: -1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { x.Close() })
		if partial {
			searchindex.ForceTextPartial(x)
		}
		_ = x.WarmTextCache(ctx)
		return x
	}
	inSQL, whole, part := open(-1, false), open(1<<30, false), open(1<<30, true)
	at := func(n int64) time.Time { return time.Unix(0, n) }
	windows := []struct {
		name         string
		since, until time.Time
	}{
		{"none", time.Time{}, time.Time{}},
		{"since -1", at(-1), time.Time{}},
		{"since 1", at(1), time.Time{}},
		{"since 2", at(2), time.Time{}},
		{"until 1", time.Time{}, at(1)},
		{"until 2", time.Time{}, at(2)},
		{"until -1", time.Time{}, at(-1)},
		{"since 0 until 13", at(0), at(13)},
		{"since 2262", at(math.MaxInt64 - 1), time.Time{}},
		{"until 2262", time.Time{}, at(math.MaxInt64)},
		{"since 1677", at(math.MinInt64), time.Time{}},
		{"until 1677", time.Time{}, at(math.MinInt64)},
		{"until 1600", time.Time{}, time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"since 1600", time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
		{"since 2300", time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC), time.Time{}},
		{"until 2300", time.Time{}, time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, ty := range []search.ContentType{search.Messages, search.Archival} {
		for _, w := range windows {
			o := search.NewOptions().Mode(search.FTS).ContentTypes(ty).Limit(100)
			if !w.since.IsZero() {
				o = o.Since(w.since)
			}
			if !w.until.IsZero() {
				o = o.Until(w.until)
			}
			var want []string
			for name, x := range map[string]*searchindex.Index{"sql": inSQL, "whole": whole, "partial": part} {
				var got []string
				for deadline := time.Now().Add(10 * time.Second); ; {
					before := searchindex.TextCacheAnswers(x)
					res, err := x.Search(ctx, "tide", search.Scope{Agent: "a"}, o)
					if err != nil {
						t.Fatalf("%s, window %s, %s: %v", ty, w.name, name, err)
					}
					got = keys(res)
					if name == "sql" || searchindex.TextCacheAnswers(x) > before {
						break
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: the %s cache does not answer", ty, name)
					}
					time.Sleep(10 * time.Millisecond)
				}
				slices.Sort(got)
				if name == "sql" {
					if w.name == "none" && len(got) != len(handEditedCreated) {
						t.Fatalf("%s in SQL, no window: %d rows, want %d", ty, len(got), len(handEditedCreated))
					}
				}
				if want == nil {
					want = got
				} else if !slices.Equal(got, want) {
					t.Errorf("%s, window %s: %s keeps %v, another %v", ty, w.name, name, got, want)
				}
			}
		}
	}
}
