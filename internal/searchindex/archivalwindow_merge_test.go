package searchindex_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/engram-go/engram/internal/pgtest"
	"github.com/engram-go/engram/memory"
	pgbackend "github.com/engram-go/engram/memory/postgres"
)

// Consolidation merges (ApplyExact over a store keeping duplicates: each
// merge supersedes its sources and places the merged entry at the first
// one's place) and an Import of the store's dump leave every entry
// indexed as a rebuild would, on each engine.
func TestArchivalWindowMergeImport(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			ctx := context.Background()
			now := baseTime
			clock := func() time.Time { return now }
			open := func() (*memory.Store, func() string) {
				if engine == "sqlite" {
					path := filepath.Join(t.TempDir(), "merge.db")
					store, err := memory.Open(ctx, path, &memory.Options{TextCacheBytes: -1, Now: clock, KeepDuplicates: true})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { store.Close() })
					db := openDBAt(t, path)
					return store, func() string {
						if extra, missing := archivalDrift(t, db); len(extra)+len(missing) > 0 {
							return fmt.Sprintf("extra %v missing %v", extra[:min(4, len(extra))], missing[:min(4, len(missing))])
						}
						return ""
					}
				}
				dsn := pgtest.Start(t).NewDatabase(t)
				store, err := memory.Open(ctx, dsn, &memory.Options{TextCacheBytes: -1, Now: clock, KeepDuplicates: true})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { store.Close() })
				b, err := pgbackend.Open(ctx, dsn, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { b.Close() })
				return store, func() string {
					if bad := archivalStalePostgres(t, b.DB()); len(bad) > 0 {
						return fmt.Sprint("stale ", bad)
					}
					return ""
				}
			}
			store, check := open()
			ar := store.Agent("a").Archival()
			metas := []map[string]any{{"session": "s1"}, {"session": "s2"}, nil}
			texts := []string{"the harbour crane", "a lighthouse keeper", "meadow larks", "the harbour crane", "canyon echo", "a lighthouse keeper", "the harbour crane"}
			var ids []int64
			for i := range 40 {
				now = now.Add(time.Duration(1+i%3) * 40 * time.Second)
				e, err := ar.Insert(ctx, memory.ArchivalEntry{Content: texts[i%len(texts)], Metadata: metas[(i/2)%len(metas)]})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, e.ID)
				if i%9 == 4 {
					if _, err := ar.Supersede(ctx, ids[i-2], memory.ArchivalEntry{Content: fmt.Sprintf("fixed %d", i), Metadata: metas[i%len(metas)]}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if d := check(); d != "" {
				t.Fatalf("before consolidating: %s", d)
			}
			rep, err := ar.Consolidate(ctx, &memory.ConsolidateOptions{ApplyExact: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d merges applied", rep.Applied)
			if d := check(); d != "" {
				t.Fatalf("after consolidating: %s", d)
			}
			dump, err := store.Export(ctx)
			if err != nil {
				t.Fatal(err)
			}
			into, checkInto := open()
			if _, err := into.Import(ctx, dump); err != nil {
				t.Fatal(err)
			}
			if d := checkInto(); d != "" {
				t.Fatalf("after importing: %s", d)
			}
		})
	}
}
