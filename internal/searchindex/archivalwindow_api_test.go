package searchindex_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/testenv"
	"github.com/engram-go/engram/memory"
)

// Random Go API writes (Insert, InsertBatch, Supersede, Delete) in two
// conversations and the stream, batches mixing them; after each, the
// index is what the engine's definition says.
func TestArchivalWindowAPIRandom(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			var store *memory.Store
			var check func() string
			now := baseTime
			clock := func() time.Time { return now }
			if engine == "sqlite" {
				path := filepath.Join(t.TempDir(), "api.db")
				var err error
				store, err = memory.Open(ctx, path, &memory.Options{TextCacheBytes: -1, Now: clock})
				if err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				db := openDBAt(t, path)
				check = func() string {
					if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
						return fmt.Sprintf("extra %v missing %v", extra[:min(4, len(extra))], missing[:min(4, len(missing))])
					}
					return ""
				}
			} else {
				var b interface{ DB() *sql.DB }
				s, bk := openPGStore(t)
				b, store = bk, s
				check = func() string {
					if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
						return fmt.Sprint("stale ", bad)
					}
					return ""
				}
			}
			seeds := uint64(3)
			if testenv.Race && !testenv.Long() {
				seeds = 1 // every seed runs without -race
			}
			for seed := range seeds {
				r := rand.New(rand.NewPCG(5+seed, 6))
				ar := store.Agent(fmt.Sprint("a", seed)).Archival()
				metas := []map[string]any{{"session": "s1"}, {"session": "s2"}, nil, nil}
				var live []int64
				var log []string
				for step := range 150 {
					now = now.Add(time.Duration(r.IntN(3)) * 40 * time.Second)
					if r.IntN(8) == 0 {
						now = now.Add(time.Hour)
					}
					m := metas[r.IntN(len(metas))]
					var what string
					switch k := r.IntN(6); {
					case k <= 1 || len(live) < 3:
						e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: fmt.Sprintf("w%d entry", step), Metadata: m})
						if err != nil {
							t.Fatal(err)
						}
						live = append(live, e.ID)
						what = fmt.Sprintf("insert %d %v", e.ID, m)
					case k == 2:
						// A batch (indexed once at its end, on SQLite) of
						// entries of both conversations and the stream, the
						// stream's a minute apart or at the batch's time.
						var batch []memory.ArchivalEntry
						for i := range 1 + r.IntN(6) {
							e := memory.ArchivalEntry{Content: fmt.Sprintf("w%db%d entry", step, i), Metadata: metas[r.IntN(len(metas))]}
							if r.IntN(2) == 0 {
								e.CreatedAt = now.Add(time.Duration(i) * time.Minute)
							}
							batch = append(batch, e)
						}
						es, err := ar.InsertBatch(ctx, batch, &memory.BatchOptions{Size: 1 + r.IntN(8)})
						if err != nil {
							t.Fatal(err)
						}
						for _, e := range es {
							live = append(live, e.ID)
						}
						what = fmt.Sprintf("batch of %d", len(batch))
					case k == 3 || k == 4:
						i := r.IntN(len(live))
						e, err := ar.Supersede(ctx, live[i], memory.ArchivalEntry{Content: fmt.Sprintf("w%d fixed", step), Metadata: m})
						if err != nil {
							t.Fatal(err)
						}
						what = fmt.Sprintf("supersede %d -> %d %v", live[i], e.ID, m)
						live[i] = e.ID
					case k == 5:
						i := r.IntN(len(live))
						if err := ar.Delete(ctx, live[i]); err != nil {
							t.Fatal(err)
						}
						what = fmt.Sprintf("delete %d", live[i])
						live = append(live[:i], live[i+1:]...)
					}
					log = append(log, what)
					if d := check(); d != "" {
						t.Fatalf("seed %d step %d %s: %s\nlog %v", seed, step, what, d, log)
					}
				}
			}
		})
	}
}

// A batch whose entries land before entries already stored: rows placed
// by hand (conversation_pos past any id) follow the batch in their
// conversation, so the entry after an inserted one, and the one after
// that (whose second entry before is now an inserted one), are indexed
// again with the batch.
func TestArchivalBatchBeforePlacedEntries(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			var store *memory.Store
			var db *sql.DB
			var check func() string
			if engine == "sqlite" {
				path := filepath.Join(t.TempDir(), "placed.db")
				var err error
				if store, err = memory.Open(ctx, path, &memory.Options{TextCacheBytes: -1}); err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				db = openDBAt(t, path)
				check = func() string {
					if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
						return fmt.Sprintf("extra %v missing %v", extra[:min(4, len(extra))], missing[:min(4, len(missing))])
					}
					return ""
				}
			} else {
				s, b := openPGStore(t)
				store, db = s, b.DB()
				check = func() string {
					if bad := archivalStalePostgres(t, db); len(bad) > 0 {
						return fmt.Sprint("stale ", bad)
					}
					return ""
				}
			}
			ar := store.Agent("a").Archival()
			meta := map[string]any{"session": 4}
			var ids []int64
			for _, w := range []string{"alpha", "bravo", "charlie", "delta"} {
				e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: w + " entry", Metadata: meta})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, e.ID)
			}
			// charlie and delta move past any id the batch will take.
			for i, id := range ids[2:] {
				if _, err := db.ExecContext(ctx, `UPDATE archival SET conversation_pos = $1 WHERE id = $2`, int64(1)<<30+int64(i), id); err != nil {
					t.Fatal(err)
				}
			}
			if d := check(); d != "" {
				t.Fatalf("after placing by hand: %s", d)
			}
			if _, err := ar.InsertBatch(ctx, []memory.ArchivalEntry{
				{Content: "echo entry", Metadata: meta}, {Content: "foxtrot entry", Metadata: meta},
			}, nil); err != nil {
				t.Fatal(err)
			}
			if d := check(); d != "" {
				t.Fatalf("after the batch: %s", d)
			}
		})
	}
}

// A batch with an entry placed by hand between its entries (the ids a
// batch takes are the next ones, in a store no other writer uses): the
// entries around the placed one, and the ones after it, are indexed
// again with the batch.
func TestArchivalBatchAroundAPlacedEntry(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			var store *memory.Store
			var db *sql.DB
			var check func() string
			if engine == "sqlite" {
				path := filepath.Join(t.TempDir(), "around.db")
				var err error
				if store, err = memory.Open(ctx, path, &memory.Options{TextCacheBytes: -1}); err != nil {
					t.Fatal(err)
				}
				defer store.Close()
				db = openDBAt(t, path)
				check = func() string {
					if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
						return fmt.Sprintf("extra %v missing %v", extra, missing)
					}
					return ""
				}
			} else {
				s, b := openPGStore(t)
				store, db = s, b.DB()
				check = func() string {
					if bad := archivalStalePostgres(t, db); len(bad) > 0 {
						return fmt.Sprint("stale ", bad)
					}
					return ""
				}
			}
			ar := store.Agent("a").Archival()
			meta := map[string]any{"session": 4}
			var last int64
			for _, w := range []string{"alpha", "bravo", "charlie"} {
				e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: w + " entry", Metadata: meta})
				if err != nil {
					t.Fatal(err)
				}
				last = e.ID
			}
			// bravo moves between the batch's first two entries (it comes
			// before an entry of its place with a greater id).
			if _, err := db.ExecContext(ctx, `UPDATE archival SET conversation_pos = $1 WHERE content = 'bravo entry'`, last+2); err != nil {
				t.Fatal(err)
			}
			es, err := ar.InsertBatch(ctx, []memory.ArchivalEntry{
				{Content: "echo entry", Metadata: meta}, {Content: "foxtrot entry", Metadata: meta}, {Content: "golf entry", Metadata: meta},
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if es[0].ID != last+1 || es[1].ID != last+2 {
				t.Fatalf("the batch took ids %d, %d, not the next ones after %d", es[0].ID, es[1].ID, last)
			}
			if d := check(); d != "" {
				t.Fatalf("after the batch: %s", d)
			}
		})
	}
}
